"""Quick start: PyTorch and CuPy share one rmm-rs pool; a snapshot for pytorch.org/memory_viz."""
import cupy, torch
import rmm, rmm.memory
from rmm.allocators.cupy import rmm_cupy_allocator
from rmm.allocators.torch import rmm_torch_allocator

rmm.reinitialize(pool_allocator=True, initial_pool_size="1GiB")  # one pool for the device
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)  # before PyTorch allocates
cupy.cuda.set_allocator(rmm_cupy_allocator)
rmm.memory._record_memory_history(max_entries=100_000)
x = torch.arange(1 << 20, device="cuda")
assert int(cupy.asarray(x).sum()) == (1 << 20) * ((1 << 20) - 1) // 2  # same memory, no copy
rmm.memory._dump_snapshot("snapshot.pickle")  # open it at pytorch.org/memory_viz
