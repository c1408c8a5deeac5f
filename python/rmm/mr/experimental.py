"""Experimental memory resources (RMM's ``rmm.mr.experimental``)."""

from rmm.pylibrmm.memory_resource.experimental import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
