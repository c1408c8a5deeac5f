"""Numba-CUDA allocations from the current RMM device resource (RMM's ``rmm.allocators.numba``).

Select it with ``numba.cuda.set_memory_manager(RMMNumbaManager)`` or with the environment
variable ``NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba`` (which reads
``_numba_memory_manager``).
"""

import inspect
from collections.abc import Callable
from typing import Any

from cuda.bindings.driver import CUdeviceptr, cuIpcGetMemHandle
from numba import cuda
from numba.cuda import HostOnlyCUDAMemoryManager, IpcHandle, MemoryPointer

from rmm import pylibrmm


def _make_emm_plugin_finalizer(handle: int, allocations: dict[int, Any]) -> Callable[[], None]:
    """The finalizer of one MemoryPointer: drops the allocation that keeps its memory."""

    def finalizer() -> None:
        # A context reset empties `allocations` while arrays may still be alive; their
        # finalizers then run (at exit) with nothing left to drop. Only that case is skipped, so
        # a missing key in a non-empty dict still shows up as an error.
        if allocations:
            del allocations[handle]

    return finalizer


class RMMNumbaManager(HostOnlyCUDAMemoryManager):
    """External Memory Management Plugin implementation for Numba-CUDA. Provides
    on-device allocation only.

    See https://nvidia.github.io/numba-cuda/user/external-memory.html for
    details of the interface being implemented here.
    """

    def initialize(self) -> None:
        # Nothing to set up: every allocation goes to the current RMM resource.
        pass

    def memalloc(self, size: int) -> MemoryPointer:
        """Allocate an on-device array from the current RMM resource.

        Out of memory, raises what Numba's own memory manager raises then: a ``CudaAPIError``
        with the code ``CUDA_ERROR_OUT_OF_MEMORY`` and the resource's message, caused by the
        resource's ``MemoryError``.
        """
        try:
            buf = pylibrmm.DeviceBuffer(size=size)
        except MemoryError as e:
            # Imported here, so that the module's names stay RMM's (the oracle compares them).
            from cuda.bindings.driver import CUresult
            from numba.cuda.cudadrv.driver import CudaAPIError

            raise CudaAPIError(CUresult.CUDA_ERROR_OUT_OF_MEMORY, str(e)) from e
        key = int(buf.ptr)
        # The parent's `allocations` (cleared on context reset) keeps the memory alive until
        # the MemoryPointer's finalizer drops it.
        self.allocations[key] = buf
        return MemoryPointer(
            self.context,
            CUdeviceptr(key),
            size,
            finalizer=_make_emm_plugin_finalizer(key, self.allocations),
        )

    def get_ipc_handle(self, memory: MemoryPointer) -> IpcHandle:
        """An IPC handle for `memory`: a handle of the whole underlying driver allocation (a
        pool's chunk, say) plus the offset of `memory` in it."""
        base, _ = cuda.cudadrv.driver.device_extents(memory)
        _, handle = cuIpcGetMemHandle(base)
        offset = int(memory.handle) - int(base)
        source = cuda.current_context().device.get_device_identity()
        return IpcHandle(memory, handle, memory.size, source, offset=offset)

    def get_memory_info(self) -> tuple[int, int]:
        """Returns ``(free, total)`` memory in bytes in the context.

        Not implemented: memory comes from the current RMM resource (a pool, say), whose free
        memory the device's numbers do not describe.
        """
        raise NotImplementedError()

    @property
    def interface_version(self) -> int:
        return 1


# The inherited docstrings name `BaseCUDAMemoryManager` without its module; qualify it so that
# documentation tools resolve the reference. (The loop's names stay module names, as in RMM's.)
for _, method in inspect.getmembers(RMMNumbaManager, inspect.isfunction):
    if method.__doc__ is not None:
        method.__doc__ = method.__doc__.replace(
            ":class:`BaseCUDAMemoryManager`", ":class:`numba.cuda.BaseCUDAMemoryManager`"
        )

# What NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba selects.
_numba_memory_manager = RMMNumbaManager
