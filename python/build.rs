//! Builds `cpp/torch_hook.cpp`: the one C++ function of the extension, which throws the exception
//! by which the PyTorch allocate hook reports failure (Rust cannot throw a C++ exception). It looks
//! PyTorch's error types up with `dlopen`/`dlsym` (libdl on older glibc).
fn main() {
    println!("cargo:rerun-if-changed=cpp/torch_hook.cpp");
    cc::Build::new().cpp(true).std("c++17").file("cpp/torch_hook.cpp").compile("rmm_torch_hook");
    println!("cargo:rustc-link-lib=dl");
}
