"""PyTorch allocations from the current RMM device resource (RMM's ``rmm.allocators.torch``).

``rmm_torch_allocator`` is a ``torch.cuda.memory.CUDAPluggableAllocator`` over two C functions
of the extension ``rmm._native``; install it before PyTorch's first CUDA allocation::

    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

It is None when PyTorch is missing or sees no CUDA device.

Out of memory, PyTorch raises ``torch.cuda.OutOfMemoryError`` (``torch.OutOfMemoryError``) with
the resource's whole message: the request and the limit (a ``LimitingResourceAdaptor``) or the
pool's size, free bytes and largest free block (a pool). Another failure is a ``RuntimeError``
with the resource's message. (The hook throws PyTorch's own C++ error types, found in PyTorch's
loaded libraries; where they are not found, every failure is a ``RuntimeError`` with the message.)

PyTorch keeps no memory statistics for a pluggable allocator (``torch.cuda.memory_allocated``
and its kin raise), so this module computes them from the device's current RMM resource, under
the same names:

- ``memory_allocated(device=None)``: bytes allocated and not yet freed, counted by the first
  ``StatisticsResourceAdaptor`` in the resource chain (the resource itself or an upstream);
  ``max_memory_allocated(device=None)``: their peak since the adaptor was made (or its counters
  pushed) or ``reset_peak_memory_stats`` was called.
- ``memory_reserved(device=None)``: bytes the device's memory holds for the resource: for a pool
  (``PoolMemoryResource``, a virtual pool) the first in the chain, its size (its chunks, handed
  out or free, as PyTorch's reserved memory is its cached segments); without a pool, the
  allocated bytes. ``max_memory_reserved(device=None)``: the largest reserved amount seen by these
  functions since the last reset (a pool shrinks only at ``torch.cuda.empty_cache()`` or its
  ``release()``, so for a pool this is mostly its size).
- ``reset_peak_memory_stats(device=None)``: sets both peaks to the current amounts.

Each takes a device index or a ``torch.device`` (None: the current device) and raises
``ValueError`` when the device's resource has no ``StatisticsResourceAdaptor`` in its chain: wrap
the resource in one to count, e.g.
``rmm.mr.set_current_device_resource(rmm.mr.StatisticsResourceAdaptor(pool))``.

``torch.cuda.empty_cache()`` works over it: PyTorch's pluggable allocator calls the function
set with ``set_reset_fn``, which this module sets. It gives back the private memory of released
CUDA graphs whose tensors are freed (``release_graph_memory()``), then, on every device, releases
the pool under the device's current resource (a ``PoolMemoryResource`` or a
``VirtualPoolMemoryResource``, directly or under the adaptors named below for ``torch.cuda.graph``):
every stream is synchronised, and the chunks whose blocks are all free go back to the upstream (a
virtual pool unmaps its whole free granules), as PyTorch's own allocator gives back its cached
segments. Errors cannot be reported through PyTorch's hook and are dropped; call the pool's
``release()`` to see them. ``torch.cuda.set_per_process_memory_fraction`` calls no function of
ours (none is set for it), so it limits nothing: put a ``LimitingResourceAdaptor`` in the
resource chain instead.

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


def _install_empty_cache_hook(allocator):
    """Make ``torch.cuda.empty_cache()`` release the pools (PyTorch's ``set_reset_fn``: its
    pluggable allocator's ``emptyCache`` calls that function, and does nothing without one)."""
    from rmm._native import _torch_empty_cache_hook

    hooks = allocator.allocator()
    if hasattr(hooks, "set_reset_fn"):
        hooks.set_reset_fn(_torch_empty_cache_hook())


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
        _install_empty_cache_hook(rmm_torch_allocator)
        del _native_module
    del is_available

# The largest reserved amount seen per device since the last reset.
_max_reserved: dict[int, int] = {}


def _device_index(device) -> int:
    if device is None:
        from rmm._cuda.gpu import getDevice

        return getDevice()
    index = getattr(device, "index", device)  # a torch.device
    if index is None:
        from rmm._cuda.gpu import getDevice

        return getDevice()
    return int(index)


def _chain(device: int):
    from rmm.mr import get_per_device_resource

    mr = get_per_device_resource(device)
    while mr is not None:
        yield mr
        mr = getattr(mr, "upstream_mr", None)


def _statistics(device: int):
    from rmm.mr import StatisticsResourceAdaptor

    for mr in _chain(device):
        if isinstance(mr, StatisticsResourceAdaptor):
            return mr
    raise ValueError(
        f"the current RMM resource of device {device} counts no statistics: wrap it in a "
        "rmm.mr.StatisticsResourceAdaptor (e.g. rmm.mr.set_current_device_resource("
        "rmm.mr.StatisticsResourceAdaptor(pool)))"
    )


def _reserved(device: int) -> int:
    stats = _statistics(device)
    for mr in _chain(device):
        pool_size = getattr(mr, "pool_size", None)
        if callable(pool_size):
            reserved = int(pool_size())
            break
    else:
        reserved = max(stats._stack_bytes()[0], 0)
    _max_reserved[device] = max(_max_reserved.get(device, 0), reserved)
    return reserved


def memory_allocated(device=None) -> int:
    """Bytes allocated from the device's current RMM resource and not yet freed."""
    return max(_statistics(_device_index(device))._stack_bytes()[0], 0)


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since the last ``reset_peak_memory_stats``."""
    return max(_statistics(_device_index(device))._stack_bytes()[1], 0)


def memory_reserved(device=None) -> int:
    """Bytes of device memory the current RMM resource holds: a pool's size, else the allocated
    bytes."""
    return _reserved(_device_index(device))


def max_memory_reserved(device=None) -> int:
    """The largest ``memory_reserved`` seen since the last ``reset_peak_memory_stats``."""
    index = _device_index(device)
    _reserved(index)
    return _max_reserved[index]


def reset_peak_memory_stats(device=None) -> None:
    """Sets the peaks of ``max_memory_allocated`` and ``max_memory_reserved`` to the current
    amounts."""
    index = _device_index(device)
    _statistics(index)._reset_peaks()
    _max_reserved.pop(index, None)
    _reserved(index)
