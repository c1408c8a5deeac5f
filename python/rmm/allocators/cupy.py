"""CuPy allocations from the current RMM device resource (RMM's ``rmm.allocators.cupy``)."""

from typing import Any

from rmm._native import _allocate

try:
    import cupy
except ImportError:
    cupy = None
else:
    # Bound once: the allocator runs for every CuPy array, and each attribute lookup costs.
    _get_current_stream = cupy.cuda.get_current_stream
    _UnownedMemory = cupy.cuda.memory.UnownedMemory
    _MemoryPointer = cupy.cuda.memory.MemoryPointer


def rmm_cupy_allocator(nbytes: int) -> Any:
    """A CuPy allocator that makes use of RMM.

    The memory comes from the current device's RMM resource, allocated (and later freed) on
    CuPy's current stream.

    Examples
    --------
    >>> from rmm.allocators.cupy import rmm_cupy_allocator
    >>> import cupy
    >>> cupy.cuda.set_allocator(rmm_cupy_allocator)
    """
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")
    alloc = _allocate(nbytes, _get_current_stream().ptr)
    # The device is known, so CuPy need not ask the driver which device owns the pointer.
    return _MemoryPointer(_UnownedMemory(alloc.ptr, nbytes, alloc, alloc.device), 0)


__all__ = ["rmm_cupy_allocator"]
