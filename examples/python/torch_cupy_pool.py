"""PyTorch and CuPy allocating from one rmm-rs pool, then a snapshot for PyTorch's memory viewer.

Run: ``python examples/python/torch_cupy_pool.py [snapshot.pickle]``; open the pickle at
https://pytorch.org/memory_viz. Exits 0 with a ``SKIP`` line where there is no GPU, PyTorch or CuPy.
"""

import sys

try:
    import cupy
    import torch
except ImportError as e:
    sys.exit(print(f"SKIP torch_cupy_pool: {e}"))
if not torch.cuda.is_available():
    sys.exit(print("SKIP torch_cupy_pool: no CUDA device"))

import rmm
import rmm.memory
from rmm.allocators.cupy import rmm_cupy_allocator
from rmm.allocators.torch import rmm_torch_allocator

rmm.reinitialize(pool_allocator=True, initial_pool_size="1GiB")  # one pool for the device
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)  # before PyTorch allocates
cupy.cuda.set_allocator(rmm_cupy_allocator)
rmm.memory._record_memory_history(max_entries=100_000)

x = torch.randn(2048, 2048, device="cuda")  # from the pool
y = cupy.asarray(x)  # the same memory, no copy
z = torch.as_tensor(y @ y, device="cuda")  # CuPy's result, from the pool too
assert torch.allclose(z, x @ x, rtol=1e-3, atol=1e-2)

path = sys.argv[1] if len(sys.argv) > 1 else "snapshot.pickle"
rmm.memory._dump_snapshot(path)
print(f"pool holds {rmm.mr.get_current_device_resource().pool_size() >> 20} MiB; snapshot in {path}")
