//! Builds the extension's C++ for PyTorch: `cpp/torch_hook.cpp`, which throws the exception by
//! which the PyTorch allocate hook reports failure (Rust cannot throw a C++ exception; it looks
//! PyTorch's error types up with `dlopen`/`dlsym`, in libdl on older glibc), and
//! `cpp/torch_graph_hooks.cpp`, the CUDA graph hooks, whose arguments are C++ types.
fn main() {
    println!("cargo:rerun-if-changed=cpp/torch_hook.cpp");
    println!("cargo:rerun-if-changed=cpp/torch_graph_hooks.cpp");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("cpp/torch_hook.cpp")
        .file("cpp/torch_graph_hooks.cpp")
        .compile("rmm_torch_hook");
    println!("cargo:rustc-link-lib=dl");
}
