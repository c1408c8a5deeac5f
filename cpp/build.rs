//! Compiles the cxx bridge (src/bridge.rs) and its plain C++ half (bridge.cpp) with the system C++
//! compiler. No CUDA headers are needed here: the CUDA side is header-only under include/ and is
//! compiled by the user's nvcc. The generated header keeps the path the headers include,
//! `rmm-rs/src/bridge.rs.h`, under `<target>/cxxbridge`.
fn main() {
    cxx_build::CFG.include_prefix = "rmm-rs";
    cxx_build::bridge("src/bridge.rs").file("bridge.cpp").include("../include").std("c++17").compile("rmm-cxxbridge");
    for path in [
        "src/bridge.rs",
        "bridge.cpp",
        "../include/rmm/detail/rust_bridge.hpp",
        "../include/rmm/detail/rust_bridge_callbacks.hpp",
        "../include/rmm/detail/rust_bridge_log_sink.hpp",
        "../include/rmm/error.hpp",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
}
