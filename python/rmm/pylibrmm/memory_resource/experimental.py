"""Experimental memory resources."""

from rmm._native import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
