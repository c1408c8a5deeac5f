// Throws std::bad_alloc for the PyTorch allocate hook (src/torch_allocator.rs). PyTorch's pluggable
// allocator does not test the hook's result for null, so a failed allocation must leave the hook
// as a C++ exception, which PyTorch's C++ code unwinds and reports; Rust cannot throw one.
#include <new>

extern "C" [[noreturn]] void rmm_rs_throw_bad_alloc() { throw std::bad_alloc{}; }
