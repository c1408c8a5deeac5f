"""PyTorch allocations from the current RMM device resource (RMM's ``rmm.allocators.torch``).

``rmm_torch_allocator`` is a ``torch.cuda.memory.CUDAPluggableAllocator`` over two C functions
of the extension ``rmm._native``; install it before PyTorch's first CUDA allocation::

    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

It is None when PyTorch is missing or sees no CUDA device.
"""

rmm_torch_allocator = None

try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError:
    pass
else:
    from torch.cuda import is_available

    if is_available():
        import rmm._native as _native_module
        from rmm.librmm import _logger  # noqa: F401 (a name of RMM's module too)

        rmm_torch_allocator = CUDAPluggableAllocator(
            _native_module.__file__,
            alloc_fn_name="rmm_rs_torch_allocate",
            free_fn_name="rmm_rs_torch_deallocate",
        )
        del _native_module
    del is_available
