//! Builds the C++ wrapper of the PyTorch allocate hook (`cpp/torch_hook.cpp`): it turns the Rust
//! hook's null result into a C++ exception, which Rust cannot throw.
fn main() {
    println!("cargo:rerun-if-changed=cpp/torch_hook.cpp");
    cc::Build::new().cpp(true).std("c++17").file("cpp/torch_hook.cpp").compile("rmm_torch_hook");
}
