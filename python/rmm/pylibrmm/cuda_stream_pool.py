"""A pool of CUDA streams (RMM's ``rmm.pylibrmm.cuda_stream_pool``)."""

from rmm._native import CudaStreamPool

__all__ = ["CudaStreamPool"]
