"""Experimental memory resources."""

from rmm._native import CudaAsyncManagedMemoryResource
