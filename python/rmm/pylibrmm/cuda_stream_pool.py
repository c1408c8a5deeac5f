"""A pool of CUDA streams (RMM's ``rmm.pylibrmm.cuda_stream_pool``)."""

from typing import Optional  # noqa: F401 (a name RMM's module has)

from rmm._native import CudaStreamPool
