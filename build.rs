//! With the `cxx-bridge` feature (default), compiles the cxx bridge (src/bridge.rs) and its plain
//! C++ half (cpp/bridge.cpp) with the system C++ compiler. No CUDA headers are needed here: the
//! CUDA side is header-only under include/ and is compiled by the user's nvcc. Without the feature
//! there is nothing to build.
fn main() {
    #[cfg(feature = "cxx-bridge")]
    {
        cxx_build::bridge("src/bridge.rs")
            .file("cpp/bridge.cpp")
            .include("include")
            .std("c++17")
            .compile("rmm-cxxbridge");
        for path in [
            "src/bridge.rs",
            "cpp/bridge.cpp",
            "include/rmm/detail/rust_bridge.hpp",
            "include/rmm/detail/rust_bridge_callbacks.hpp",
            "include/rmm/detail/rust_bridge_log_sink.hpp",
            "include/rmm/error.hpp",
        ] {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
