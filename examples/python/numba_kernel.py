"""A Numba kernel on arrays whose memory comes from an rmm-rs pool.

Run: ``python examples/python/numba_kernel.py``. Exits 0 with a ``SKIP`` line where there is no
GPU or no ``numba-cuda``.
"""

import sys

try:
    import numpy as np
    from numba import cuda
except ImportError as e:
    sys.exit(print(f"SKIP numba_kernel: {e}"))
import rmm
from rmm.allocators.numba import RMMNumbaManager

cuda.set_memory_manager(RMMNumbaManager)  # before Numba makes its context
if not cuda.is_available():
    sys.exit(print("SKIP numba_kernel: no CUDA device"))
rmm.reinitialize(pool_allocator=True, initial_pool_size="256MiB")  # Numba's arrays come from it


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


x = cuda.to_device(np.arange(1 << 20, dtype=np.float32))
y = cuda.to_device(np.ones(1 << 20, dtype=np.float32))
out = cuda.device_array_like(x)
axpy[(x.size + 255) // 256, 256](2.0, x, y, out)
assert np.array_equal(out.copy_to_host(), 2 * np.arange(1 << 20, dtype=np.float32) + 1)
print("axpy ok; pool size", rmm.mr.get_current_device_resource().pool_size())
