"""The classes behind ``rmm``: streams, buffers and memory resources (RMM's ``rmm.pylibrmm``)."""

from rmm.pylibrmm import memory_resource
from rmm.pylibrmm.stream import CudaStreamFlags

__all__ = [
    "CudaStreamFlags",
    "memory_resource",
]
