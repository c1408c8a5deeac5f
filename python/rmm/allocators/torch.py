"""PyTorch allocations from the current RMM device resource (RMM's ``rmm.allocators.torch``).

``rmm_torch_allocator`` is a ``torch.cuda.memory.CUDAPluggableAllocator`` over two C functions
of the extension ``rmm._native``; install it before PyTorch's first CUDA allocation::

    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

It is None when PyTorch is missing or sees no CUDA device.

``torch.cuda.graph`` works over it when the current device resource is a ``PoolMemoryResource``
or a ``VirtualPoolMemoryResource`` (directly or under statistics, tracking, limiting, logging or
prefetch adaptors): PyTorch's graph hooks (``beginAllocateToPool``, ``endAllocateToPool``,
``releasePool``) are installed on the allocator, so tensors allocated on a capturing stream come
from memory private to the capture, and nothing the pool does is illegal during capture. The
memory goes back to the pool when PyTorch releases the graph (``del g`` or ``g.reset()``) if the
graph's tensors are all freed by then; otherwise call ``release_graph_memory()`` once they are.
"""

rmm_torch_allocator = None


def release_graph_memory():
    """Give back the private memory of every CUDA graph PyTorch released whose tensors are freed.

    Returns the number of captures whose memory went back to their pool. Graphs still alive keep
    theirs (their replays use it).
    """
    from rmm._native import _torch_release_graph_memory

    return _torch_release_graph_memory()


def _install_graph_hooks(allocator):
    """Set PyTorch's three CUDA graph hooks of ``allocator`` to ours (PyTorch 2.3 and later)."""
    from rmm._native import _torch_graph_hooks

    hooks = allocator.allocator()
    if not hasattr(hooks, "set_begin_allocate_to_pool"):
        return
    begin, end, release = _torch_graph_hooks()
    hooks.set_begin_allocate_to_pool(begin)
    hooks.set_end_allocate_to_pool_fn(end)
    hooks.set_release_pool(release)


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
        _install_graph_hooks(rmm_torch_allocator)
        del _native_module
    del is_available
