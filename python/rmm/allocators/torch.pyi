# Type stubs of rmm.allocators.torch.

from torch.cuda.memory import CUDAPluggableAllocator

# None when PyTorch is missing or sees no CUDA device.
rmm_torch_allocator: CUDAPluggableAllocator | None
