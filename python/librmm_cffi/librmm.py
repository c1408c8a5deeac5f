"""The original RMM's Python interface (``from librmm_cffi import librmm as rmm``), over this
package's Rust resources.

Memory comes from the legacy C API of the core (``rmmInitialize``, ``rmmAlloc``, ``rmmFree``, ...),
which allocates from the current device resource: the resource ``initialize()`` installed from
``librmm_config``, or any resource set since with ``rmm.mr.set_current_device_resource``. The
arrays are Numba device arrays; each frees its memory when it is collected, on the stream it was
allocated on. Numba is imported on the first call that makes or reads an array, so the settings,
``initialize``/``finalize`` and the log work without it.

Every failure of the C API raises ``RMMError`` whose ``errcode`` is the ``rmmError_t`` name (for
example ``"RMM_ERROR_OUT_OF_MEMORY"``), which is also its message.
"""

import ctypes
import os
import sys
import threading

import numpy as np

from librmm_cffi import _layout
from librmm_cffi import librmm_config as rmm_cfg
from rmm import _native
from rmm.rmm import RMMError

# rmmError_t
RMM_SUCCESS = 0
RMM_ERROR_CUDA_ERROR = 1
RMM_ERROR_INVALID_ARGUMENT = 2
RMM_ERROR_NOT_INITIALIZED = 3
RMM_ERROR_OUT_OF_MEMORY = 4
RMM_ERROR_UNKNOWN = 5
RMM_ERROR_IO = 6
N_RMM_ERROR = 7

# rmmAllocationMode_t (bit flags)
CudaDefaultAllocation = 0
PoolAllocation = 1
CudaManagedMemory = 2

_lock = threading.Lock()
# Counts finalize() calls: an array made before the last one had its memory freed by it.
_finalizations = 0
# Whether the session records call sites (enable_logging when it was initialised).
_log_sites = False
_HERE = os.path.dirname(os.path.abspath(__file__))


def rmmGetErrorString(errcode):
    """The name of an ``rmmError_t`` code (``"Internal error. Unknown error code."`` for others)."""
    return _native.legacy_error_name(int(errcode))


def _check(code):
    """Raises ``RMMError`` with the code's name unless it is ``RMM_SUCCESS``."""
    if code != RMM_SUCCESS:
        name = rmmGetErrorString(code)
        raise RMMError(name, name)


def _caller():
    """``(file, line)`` of the first caller outside this package, for the event log (only when
    logging is on, as walking the stack costs time)."""
    if not _log_sites:
        return "", 0
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _HERE:
        frame = frame.f_back
    return ("", 0) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _stream_handle(stream):
    """The ``cudaStream_t`` of a ``stream=`` argument: an int handle (0 is the default stream), a
    Numba or CuPy stream, or any object with ``__cuda_stream__``."""
    if stream is None:
        return 0
    if isinstance(stream, (int, np.integer)):
        if stream < 0:
            raise ValueError(f"a stream handle is not negative: {stream}")
        return int(stream)
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int((protocol() if callable(protocol) else protocol)[1])
    for attr in ("handle", "ptr"):
        handle = getattr(stream, attr, None)
        if handle is not None:
            return int(getattr(handle, "value", handle) or 0)
    raise TypeError(f"stream must be a stream handle (int) or a CUDA stream object, not {type(stream).__name__}")


# ---- initialisation ----


def initialize():
    """Makes the resource ``librmm_config`` asks for the current device resource.

    Importing ``librmm_cffi`` calls it with the settings then in place. Called again after the
    settings changed, it moves to the new resource: arrays made before stay valid and are freed
    through the resource they came from. With unchanged settings it does nothing. Returns
    ``RMM_SUCCESS``; raises ``RMMError`` (``RMM_ERROR_CUDA_ERROR`` without a device,
    ``RMM_ERROR_OUT_OF_MEMORY`` when the pool cannot be had).
    """
    global _log_sites
    mode = CudaDefaultAllocation
    if rmm_cfg.use_pool_allocator:
        mode |= PoolAllocation
    if rmm_cfg.use_managed_memory:
        mode |= CudaManagedMemory
    size = rmm_cfg.initial_pool_size
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
        raise TypeError(f"librmm_config.initial_pool_size must be an int, not {type(size).__name__}")
    if size < 0:
        raise ValueError(f"librmm_config.initial_pool_size must not be negative: {size}")
    logging = bool(rmm_cfg.enable_logging)
    with _lock:
        _check(_native.legacy_initialize(mode, int(size), logging))
        _log_sites = logging
    return RMM_SUCCESS


def finalize():
    """Frees every allocation still live (arrays over them must not be used after), puts back the
    resource that was current before ``initialize()`` and ends the session. Returns
    ``RMM_SUCCESS``; ``RMMError("RMM_ERROR_NOT_INITIALIZED", ...)`` when not initialised."""
    global _finalizations, _log_sites
    with _lock:
        code = _native.legacy_finalize()
        if code != RMM_ERROR_NOT_INITIALIZED:
            # The session is gone even when a free in it failed.
            _finalizations += 1
            _log_sites = False
        _check(code)
    return RMM_SUCCESS


def is_initialized():
    """Whether ``initialize()`` succeeded and ``finalize()`` has not run since."""
    return _native.legacy_options() is not None


def _initialize_quietly():
    """``initialize()`` at import, as the original did: without a device it leaves the module
    uninitialised instead of failing the import (each allocation then raises
    ``RMM_ERROR_NOT_INITIALIZED``)."""
    try:
        initialize()
    except RMMError:
        pass


def _finalize_at_exit():
    """The exit handler: finalises if still initialised."""
    try:
        if is_initialized():
            finalize()
    except RMMError:
        pass


# ---- the C API, one call each ----


def rmmAlloc(size, stream=0):
    """``size`` bytes from the current device resource on ``stream``; returns the address."""
    file, line = _caller()
    code, ptr = _native.legacy_alloc(int(size), _stream_handle(stream), file, line)
    _check(code)
    return ptr


def rmmRealloc(new_size, stream=0, ptr=0):
    """Moves the allocation at ``ptr`` to one of ``new_size`` bytes, copying what fits, and returns
    the new address. The original took no pointer, so it always allocated afresh: ``ptr`` 0 (the
    default) does the same."""
    file, line = _caller()
    code, new = _native.legacy_realloc(int(ptr), int(new_size), _stream_handle(stream), file, line)
    _check(code)
    return new


def rmmFree(ptr, stream=0):
    """Frees ``ptr`` (from ``rmmAlloc``) on ``stream``."""
    file, line = _caller()
    _check(_native.legacy_free(int(ptr), _stream_handle(stream), file, line))


def rmmGetInfo(stream=0):
    """``(free, total)`` bytes of the device the session runs on."""
    _stream_handle(stream)
    code, free, total = _native.legacy_get_info()
    _check(code)
    return free, total


def rmmGetAllocationOffset(ptr, stream=0):
    """How far ``ptr`` lies from the start of the driver allocation it was carved from."""
    _stream_handle(stream)
    code, offset = _native.legacy_allocation_offset(int(ptr))
    _check(code)
    return offset


def rmmLogSize():
    """The length in bytes of the CSV event log."""
    return len(csv_log().encode())


def rmmWriteLog(filename):
    """Writes the CSV event log to ``filename`` (replacing it)."""
    _check(_native.legacy_write_log(os.fsdecode(filename)))


def csv_log():
    """The CSV log of every allocation, reallocation and free since ``initialize()`` (the header
    line alone unless ``librmm_config.enable_logging`` was set)."""
    return _native.legacy_csv_log()


# ---- Numba device arrays ----


def _numba_cuda():
    """``numba.cuda``, imported on first use."""
    try:
        from numba import cuda
    except ImportError as e:
        raise ImportError("librmm_cffi's device arrays need Numba with CUDA: pip install numba-cuda") from e
    return cuda


def _make_finalizer(ptr, stream):
    """The finalizer of the Numba memory over ``ptr``: frees it on ``stream`` (kept alive with
    it), unless ``finalize()`` has freed it already."""
    generation = _finalizations

    def finalizer():
        if generation != _finalizations:
            return
        file, line = _caller()
        code = _native.legacy_free(ptr, _stream_handle(stream), file, line)
        if generation == _finalizations:  # a finalize() that ran meanwhile freed it
            _check(code)

    return finalizer


def _array(cuda, ptr, nbytes, shape, strides, dtype, finalizer=None):
    """A Numba device array over ``nbytes`` at ``ptr``."""
    from numba.cuda.cudadrv import devicearray, driver

    if nbytes == 0:
        return devicearray.DeviceNDArray(shape, strides, dtype)
    mem = driver.MemoryPointer(cuda.current_context(), ctypes.c_void_p(ptr), nbytes, finalizer=finalizer)
    return devicearray.DeviceNDArray(shape, strides, dtype, gpu_data=mem)


def _allocate_array(cuda, shape, strides, dtype, nbytes, stream, make):
    """Allocates ``nbytes`` on ``stream`` and wraps them with ``make(ptr, finalizer)``; the memory
    is freed again if wrapping fails."""
    if nbytes == 0:
        return make(0, None)
    handle = _stream_handle(stream)
    ptr = rmmAlloc(nbytes, handle)
    try:
        return make(ptr, _make_finalizer(ptr, stream))
    except BaseException:
        _native.legacy_free(ptr, handle, "", 0)
        raise


def device_array_from_ptr(ptr, nelem, dtype=np.float64, finalizer=None):
    """A one-dimensional Numba device array of ``nelem`` elements of ``dtype`` over memory at
    ``ptr`` that this module does not own (``finalizer``, if given, runs when the array dies).
    ``np.datetime64`` means ``datetime64[ms]``. Raises ValueError for memory the device cannot
    address (device, managed and page-locked host memory pass)."""
    dtype = np.dtype("datetime64[ms]") if dtype is np.datetime64 else np.dtype(dtype)
    (nelem,), strides, dtype, nbytes = _layout.layout(nelem, dtype)
    if nbytes and not int(ptr):
        raise ValueError(f"a null pointer cannot hold {nelem} elements")
    # Memory the device cannot address (unmapped, pageable host memory) is refused here, not met
    # by a kernel.
    _native._check_device_pointer(int(ptr), nbytes)
    cuda = _numba_cuda()
    return _array(cuda, int(ptr), nbytes, (nelem,), strides, dtype, finalizer)


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """An uninitialised Numba device array (as ``numba.cuda.device_array``) whose memory comes from
    the current device resource, allocated on ``stream`` and freed on it when the array dies."""
    shape, strides, dtype, nbytes = _layout.layout(shape, dtype, strides, order)
    _stream_handle(stream)
    cuda = _numba_cuda()
    return _allocate_array(
        cuda,
        shape,
        strides,
        dtype,
        nbytes,
        stream,
        lambda ptr, fin: _array(cuda, ptr, nbytes, shape, strides, dtype, fin),
    )


def device_array_like(ary, stream=0):
    """``device_array`` with the shape, dtype and strides of ``ary`` (a 0-d array gives one of
    one element)."""
    if ary.ndim == 0:
        ary = ary.reshape(1)
    return device_array(ary.shape, ary.dtype, ary.strides, stream=stream)


def _device_record(dtype, stream):
    """A Numba device record of ``dtype`` in memory from the current device resource."""
    cuda = _numba_cuda()
    from numba.cuda.cudadrv import devicearray, driver

    def make(ptr, fin):
        mem = driver.MemoryPointer(cuda.current_context(), ctypes.c_void_p(ptr), dtype.itemsize, finalizer=fin)
        return devicearray.DeviceRecord(dtype, gpu_data=mem)

    return _allocate_array(cuda, (), (), dtype, dtype.itemsize, stream, make)


def to_device(ary, stream=0, copy=True, to=None):
    """Copies a host array (or structured scalar) to the device, into ``to`` when given (only if
    ``copy``) or else into a new array from ``device_array_like``; returns the device array."""
    if to is None:
        if isinstance(ary, np.void):
            to = _device_record(ary.dtype, stream)
        else:
            if not isinstance(ary, np.ndarray):
                ary = np.asarray(ary)
            to = device_array_like(ary, stream=stream)
        to.copy_to_device(ary, stream=stream)
        return to
    if copy:
        to.copy_to_device(ary, stream=stream)
    return to


def auto_device(obj, stream=0, copy=True):
    """``(device_object, converted)`` as Numba's ``auto_device``: device memory (or an object with
    ``__cuda_array_interface__``) is returned as it is with ``False``; anything else gets device
    memory from the current resource (copied into unless ``copy`` is False) and ``True``."""
    cuda = _numba_cuda()
    from numba.cuda.cudadrv import devicearray, driver

    if driver.is_device_memory(obj):
        return obj, False
    if getattr(obj, "__cuda_array_interface__", None) is not None:
        return cuda.as_cuda_array(obj), False
    if isinstance(obj, np.void):
        devobj = _device_record(obj.dtype, stream)
    else:
        if not isinstance(obj, np.ndarray):
            obj = np.asarray(obj)
        devicearray.sentry_contiguous(obj)
        devobj = device_array_like(obj, stream=stream)
    if copy:
        devobj.copy_to_device(obj, stream=stream)
    return devobj, True


def get_ipc_handle(ary, stream=0):
    """An ``IpcArrayHandle`` that another process opens (``handle.open()`` or ``with handle as
    a:``) to map ``ary``'s memory. For a block carved from a pool the handle is that of the whole
    driver allocation, with the block's offset in it."""
    cuda = _numba_cuda()
    from numba.cuda.cudadrv import devicearray, driver

    _stream_handle(stream)
    mem = ary.gpu_data
    ptr = ary.device_ctypes_pointer.value
    if not ptr:
        raise ValueError("an empty array has no memory to share")
    code, offset = _native.legacy_allocation_offset(ptr)
    if code in (RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_NOT_INITIALIZED):
        # Memory this module did not allocate: ask the driver where its allocation starts.
        base, _ = driver.device_extents(mem)
        offset = ptr - base
    else:
        _check(code)
    handle = driver.driver.cuIpcGetMemHandle(ptr - offset)
    device = cuda.current_context().device.get_device_identity()
    ipch = driver.IpcHandle(mem, handle, mem.size, device, offset=offset)
    desc = {"shape": ary.shape, "strides": ary.strides, "dtype": ary.dtype}
    return devicearray.IpcArrayHandle(ipc_handle=ipch, array_desc=desc)
