"""CuPy allocations from the current RMM device resource (RMM's ``rmm.allocators.cupy``).

``rmm_cupy_allocator(nbytes)`` takes ``nbytes`` from the current device's resource on CuPy's
current stream and frees them on that stream when CuPy drops the memory; install it with
``cupy.cuda.set_allocator(rmm_cupy_allocator)``. It is one native call (it runs for every CuPy
array). As RMM's module, this one imports CuPy when it is imported (``cupy`` is None where CuPy
is not installed).
"""

from typing import Any

from rmm import pylibrmm
from rmm._native import rmm_cupy_allocator as rmm_cupy_allocator
from rmm.pylibrmm.stream import Stream

try:
    import cupy
except ImportError:
    cupy = None
