"""The classes behind ``rmm``: streams, buffers and memory resources (RMM's ``rmm.pylibrmm``)."""

from rmm.pylibrmm import helper, memory_resource, utils  # noqa: F401 (submodules, as in RMM)
from rmm.pylibrmm.cuda_stream_pool import CudaStreamPool
from rmm.pylibrmm.device_buffer import DeviceBuffer
from rmm.pylibrmm.stream import CudaStreamFlags

__all__ = [
    "CudaStreamPool",
    "CudaStreamFlags",
    "DeviceBuffer",
    "memory_resource",
]
