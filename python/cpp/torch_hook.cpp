// The allocate hook PyTorch's CUDAPluggableAllocator calls. PyTorch does not test the hook's result
// for null: a null would become a tensor at address 0. Failure must therefore leave the hook as a
// C++ exception, which PyTorch's C++ code unwinds and reports as an allocation failure; Rust
// cannot throw one, so this small C++ function wraps the Rust hook, which returns null on failure.
#include <cstddef>
#include <new>

extern "C" void* rmm_rs_torch_allocate_or_null(std::size_t size, int device, void* stream);

extern "C" void* rmm_rs_torch_allocate(std::size_t size, int device, void* stream)
{
  void* p = rmm_rs_torch_allocate_or_null(size, device, stream);
  if (p == nullptr && size != 0) { throw std::bad_alloc{}; }
  return p;
}
