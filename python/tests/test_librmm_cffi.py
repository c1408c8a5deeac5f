"""librmm_cffi: the original RMM's Python module (``from librmm_cffi import librmm as rmm``) over
our resources.

Host tests (names, settings, argument checks, errors) run anywhere. The GPU tests need a device
and Numba with CUDA (numba-cuda); they skip with the reason printed otherwise. Importing the
package initialises it, so it is imported by the ``legacy`` fixture, which finalises it again
after the module's tests: the other test modules see the resource they had.
"""

import gc
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rmm
from conftest import GPU_SKIP_REASON

# The names of the original module (its wrapper class and package), and the settings.
ORIGINAL_NAMES = [
    "initialize",
    "finalize",
    "is_initialized",
    "csv_log",
    "rmmAlloc",
    "rmmRealloc",
    "rmmFree",
    "rmmGetInfo",
    "rmmGetAllocationOffset",
    "rmmGetErrorString",
    "rmmLogSize",
    "rmmWriteLog",
    "device_array_from_ptr",
    "device_array",
    "device_array_like",
    "to_device",
    "auto_device",
    "get_ipc_handle",
]
CODES = {
    "RMM_SUCCESS": 0,
    "RMM_ERROR_CUDA_ERROR": 1,
    "RMM_ERROR_INVALID_ARGUMENT": 2,
    "RMM_ERROR_NOT_INITIALIZED": 3,
    "RMM_ERROR_OUT_OF_MEMORY": 4,
    "RMM_ERROR_UNKNOWN": 5,
    "RMM_ERROR_IO": 6,
}
SETTINGS = {"use_pool_allocator": False, "use_managed_memory": False, "initial_pool_size": 0, "enable_logging": False}


@pytest.fixture(scope="module")
def legacy():
    """The package, imported (which initialises it where there is a device); finalised after."""
    import librmm_cffi

    yield librmm_cffi
    librmm_cffi.librmm._finalize_at_exit()


@pytest.fixture
def cfg(legacy, monkeypatch):
    """``librmm_config``, its settings put back after the test."""
    for name, value in SETTINGS.items():
        monkeypatch.setattr(legacy.librmm_config, name, value)
    return legacy.librmm_config


def errcode(excinfo):
    return excinfo.value.errcode


# ---- host ----


def test_names_constants_and_settings(legacy):
    lib = legacy.librmm
    for name in ORIGINAL_NAMES:
        assert callable(getattr(lib, name)), name
    for name, value in CODES.items():
        assert getattr(lib, name) == value
    assert lib.N_RMM_ERROR == 7
    assert (lib.CudaDefaultAllocation, lib.PoolAllocation, lib.CudaManagedMemory) == (0, 1, 2)
    import librmm_cffi.librmm_config as config

    assert config is legacy.librmm_config
    for name, value in SETTINGS.items():
        assert getattr(config, name) == value, name
    assert legacy.RMMError is rmm.RMMError


def test_error_strings_name_each_code(legacy):
    lib = legacy.librmm
    for name, value in CODES.items():
        assert lib.rmmGetErrorString(value) == name
    for bad in (7, -1, 2**31 - 1):
        assert lib.rmmGetErrorString(bad) == "Internal error. Unknown error code."


def test_calls_without_a_session_raise_the_named_error(legacy, cfg):
    lib = legacy.librmm
    was = lib.is_initialized()
    lib._finalize_at_exit()
    assert not lib.is_initialized()
    try:
        for call in (
            lambda: lib.rmmAlloc(256),
            lambda: lib.rmmFree(0),
            lambda: lib.rmmRealloc(256, 0),
            lambda: lib.rmmGetInfo(),
            lambda: lib.rmmGetAllocationOffset(0x1000),
            lib.finalize,
        ):
            with pytest.raises(legacy.RMMError) as e:
                call()
            assert errcode(e) == "RMM_ERROR_NOT_INITIALIZED"
            assert str(e.value) == "RMM_ERROR_NOT_INITIALIZED"
        log = lib.csv_log()
        assert log.startswith("Event Type,Device ID,Address,Stream,Size (bytes)")
        assert log.count("\n") == 1 and lib.rmmLogSize() == len(log)
    finally:
        if was:
            lib.initialize()


def test_without_a_device_initialize_is_a_cuda_error(legacy, cfg):
    if GPU_SKIP_REASON is None:
        pytest.skip("a device is present")
    lib = legacy.librmm
    for pool in (False, True):
        cfg.use_pool_allocator = pool
        with pytest.raises(legacy.RMMError) as e:
            lib.initialize()
        assert errcode(e) == "RMM_ERROR_CUDA_ERROR"
        assert not lib.is_initialized()


def test_settings_of_the_wrong_kind_are_refused(legacy, cfg):
    lib = legacy.librmm
    was = lib.is_initialized()
    cfg.use_pool_allocator = True
    for bad, error in ((-1, ValueError), ("1GiB", TypeError), (1.5, TypeError), (True, TypeError)):
        cfg.initial_pool_size = bad
        with pytest.raises(error, match="initial_pool_size"):
            lib.initialize()
        assert lib.is_initialized() == was, "a refused setting changes nothing"


def test_write_log_errors(legacy, tmp_path):
    lib = legacy.librmm
    with pytest.raises(legacy.RMMError) as e:
        lib.rmmWriteLog(str(tmp_path / "missing-dir" / "log.csv"))
    assert errcode(e) == "RMM_ERROR_IO"
    path = tmp_path / "log.csv"
    lib.rmmWriteLog(path)
    assert path.read_text().startswith("Event Type,")


@pytest.mark.parametrize(
    "args, kwargs, error",
    [
        ((-1,), {}, ValueError),
        (((2, -3),), {}, ValueError),
        (((2, "a"),), {}, TypeError),
        ((2.5,), {}, TypeError),
        ((3,), {"order": "K"}, ValueError),
        (((2, 3),), {"strides": (8,)}, ValueError),
        (((2, 3),), {"strides": "x"}, TypeError),
        ((3,), {"dtype": "not-a-dtype"}, TypeError),
        ((3,), {"dtype": "V0"}, ValueError),
        ((3,), {"stream": "stream"}, TypeError),
        ((3,), {"stream": -1}, ValueError),
    ],
)
def test_device_array_checks_its_arguments_first(legacy, args, kwargs, error):
    # Refused before Numba is imported or anything is allocated: these run without either.
    with pytest.raises(error):
        legacy.librmm.device_array(*args, **kwargs)


def test_device_array_from_ptr_checks_its_arguments_first(legacy):
    lib = legacy.librmm
    with pytest.raises(ValueError, match="null pointer"):
        lib.device_array_from_ptr(0, 10)
    with pytest.raises(ValueError):
        lib.device_array_from_ptr(0x1000, -1)


def _byte_span(a):
    """Bytes from the lowest to the highest byte an array touches (NumPy's own count)."""
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # NumPy 1
        byte_bounds = np.byte_bounds
    low, high = byte_bounds(a)
    return high - low


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5), (4, 1, 6)])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["int8", "float64", "complex64", [("a", "i4"), ("b", "f8")]])
def test_layout_is_numpys(shape, order, dtype):
    from librmm_cffi import _layout

    host = np.empty(shape, dtype=dtype, order=order)
    got_shape, strides, got_dtype, nbytes = _layout.layout(shape, dtype, None, order)
    assert (got_shape, strides, got_dtype, nbytes) == (host.shape, host.strides, host.dtype, host.nbytes)
    # Strided views (negative steps too) span what NumPy says they span.
    if host.ndim:
        view = host[(slice(None, None, -2),) * host.ndim]
        assert _layout.extent(view.shape, view.strides, view.itemsize) == _byte_span(view)


def test_empty_shapes_take_no_bytes():
    from librmm_cffi import _layout

    for shape in [(0,), (3, 0), (0, 5, 2)]:
        assert _layout.layout(shape, "f8")[3] == 0


def test_stream_arguments_become_handles(legacy):
    h = legacy.librmm._stream_handle

    class Protocol:
        def __cuda_stream__(self):
            return (0, 0xABC)

    class Handle:
        class handle:
            value = 0x123

    assert [h(None), h(0), h(5), h(np.int64(7)), h(Protocol()), h(Handle())] == [0, 0, 5, 7, 0xABC, 0x123]
    with pytest.raises(TypeError, match="stream"):
        h(object())


def test_imports_without_numba_and_says_what_arrays_need():
    # A fresh interpreter in which `numba` cannot be imported.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["numba"] = None
        from librmm_cffi import librmm as rmm
        from librmm_cffi import librmm_config as rmm_cfg
        assert rmm_cfg.use_pool_allocator is False
        try:
            rmm.device_array(4)
        except ImportError as e:
            print("ImportError:", e)
        """
    )
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=here, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ImportError: librmm_cffi's device arrays need Numba with CUDA" in out.stdout


# ---- on a GPU, with Numba ----


@pytest.fixture
def nb(gpu, legacy, cfg):
    """numba.cuda, with the module initialised with the default settings."""
    try:
        from numba import cuda
    except Exception as e:  # not installed, or no CUDA libraries for it
        pytest.skip(f"Numba with CUDA (numba-cuda) is not usable here: {e}")
    if not cuda.is_available():
        pytest.skip("numba.cuda sees no device")
    legacy.librmm.initialize()
    return cuda


_compiles = []

# Kernels compiled from source in a namespace where `cuda` is a global, as in a user's module.
KERNELS = """
@cuda.jit
def probe(out):
    out[0] = 1

@cuda.jit
def write(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * i + 1
"""


@pytest.fixture
def write_kernel(nb):
    """A kernel writing ``2 * i + 1`` at each index. Skips, with Numba's error, where numba-cuda
    cannot compile a kernel on its own memory (a NumPy it does not support, say): that is no fault
    of this module."""
    kernels = {"cuda": nb}
    exec(KERNELS, kernels)
    if not _compiles:
        try:
            probe = nb.device_array(1, dtype=np.int32)
            kernels["probe"][1, 1](probe)
            _compiles.append(int(probe.copy_to_host()[0]) == 1 or "the probe kernel wrote nothing")
        except Exception as e:
            _compiles.append(f"{type(e).__name__}: {e}")
    if _compiles[0] is not True:
        pytest.skip(f"numba-cuda cannot compile a kernel here: {_compiles[0]}")
    return kernels["write"]


@pytest.mark.parametrize("pool", [False, True])
def test_a_kernel_writes_into_device_array_memory(nb, legacy, cfg, write_kernel, pool):
    lib = legacy.librmm
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    cfg.use_pool_allocator, cfg.initial_pool_size = pool, 16 << 20
    lib.initialize()
    pad = lib.device_array(100, dtype=np.uint8)  # in a pool, the next block lies past the start
    a = lib.device_array(5000, dtype=np.float32)
    assert isinstance(a, DeviceNDArray)
    assert (a.shape, a.dtype, a.strides) == ((5000,), np.float32, (4,))
    offsets = {lib.rmmGetAllocationOffset(x.device_ctypes_pointer.value) for x in (pad, a)}
    assert (offsets == {0}) != pool, f"offsets {offsets}: own allocations, or blocks of one chunk"
    write_kernel[(5000 + 255) // 256, 256](a)
    np.testing.assert_array_equal(a.copy_to_host(), 2 * np.arange(5000, dtype=np.float32) + 1)
    del pad, a
    cfg.use_pool_allocator, cfg.initial_pool_size = False, 0
    lib.initialize()

    b = lib.device_array((30, 40), dtype=np.int16, order="F")
    assert b.strides == (2, 60) and b.is_f_contiguous()
    assert lib.device_array(0).size == 0


def test_round_trips(nb, legacy):
    lib = legacy.librmm
    host = np.arange(12 * 7, dtype=np.float64).reshape(12, 7)
    d = lib.to_device(host)
    np.testing.assert_array_equal(d.copy_to_host(), host)
    f = np.asfortranarray(host)
    like = lib.device_array_like(f)
    assert (like.shape, like.strides, like.dtype) == (f.shape, f.strides, f.dtype)
    assert lib.to_device(f, to=like) is like
    np.testing.assert_array_equal(like.copy_to_host(), f)
    assert lib.to_device(host * 0, to=like, copy=False) is like
    np.testing.assert_array_equal(like.copy_to_host(), f)
    np.testing.assert_array_equal(lib.to_device(np.float32(2.5)).copy_to_host(), [2.5])
    np.testing.assert_array_equal(lib.to_device([1, 2, 3]).copy_to_host(), [1, 2, 3])

    same, converted = lib.auto_device(d)
    assert same is d and converted is False
    made, converted = lib.auto_device(host)
    assert converted is True and lib.rmmGetAllocationOffset(made.device_ctypes_pointer.value) == 0
    np.testing.assert_array_equal(made.copy_to_host(), host)
    empty, converted = lib.auto_device(host, copy=False)
    assert converted is True and empty.shape == host.shape
    with pytest.raises(ValueError):
        lib.auto_device(host[:, ::2])  # not contiguous, as Numba refuses

    rec = np.zeros(1, dtype=[("a", "i4"), ("b", "f8")])[0]
    rec["a"], rec["b"] = 7, 1.5
    drec, converted = lib.auto_device(rec)
    assert converted is True and lib.rmmGetAllocationOffset(drec.device_ctypes_pointer.value) == 0
    back = drec.copy_to_host()
    assert (int(back["a"]), float(back["b"])) == (7, 1.5)

    stream = nb.stream()
    s = lib.to_device(host, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(s.copy_to_host(), host)


def test_memory_goes_back_to_the_current_resource_when_arrays_die(nb, legacy):
    lib = legacy.librmm
    before = rmm.mr.get_current_device_resource()
    stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(stats)
    try:
        stream = nb.stream()
        arrays = [lib.device_array(1000 + i, dtype=np.uint8, stream=stream) for i in range(10)]
        arrays.append(lib.to_device(np.ones(4096)))
        counts = stats.allocation_counts
        assert counts.current_count == 11 and counts.current_bytes == sum(1000 + i for i in range(10)) + 4096 * 8
        del arrays
        gc.collect()
        stream.synchronize()
        assert stats.allocation_counts.current_count == 0 and stats.allocation_counts.current_bytes == 0

        # Memory not from the module is left to its owner's finalizer.
        ptr = lib.rmmAlloc(800)
        freed = []
        a = lib.device_array_from_ptr(ptr, 100, dtype=np.int64, finalizer=lambda: freed.append(lib.rmmFree(ptr)))
        assert a.shape == (100,) and stats.allocation_counts.current_count == 1
        del a
        gc.collect()
        assert freed == [None] and stats.allocation_counts.current_count == 0

        # The raw calls: realloc moves a block (the original's form, without a pointer, allocates).
        p = lib.rmmAlloc(100, stream)
        q = lib.rmmRealloc(200, stream, ptr=p)
        assert q != p
        with pytest.raises(legacy.RMMError) as e:
            lib.rmmFree(p, stream)
        assert errcode(e) == "RMM_ERROR_INVALID_ARGUMENT"
        r = lib.rmmRealloc(64, 0)
        assert stats.allocation_counts.current_bytes == 200 + 64
        lib.rmmFree(q, stream)
        lib.rmmFree(r)
        stream.synchronize()
        assert stats.allocation_counts.current_count == 0
    finally:
        rmm.mr.set_current_device_resource(before)


def test_pool_then_new_settings_then_finalize(nb, legacy, cfg):
    lib = legacy.librmm
    lib.finalize()
    cfg.use_pool_allocator = True
    cfg.initial_pool_size = 64 << 20
    cfg.enable_logging = True
    assert lib.initialize() == lib.RMM_SUCCESS
    assert lib.is_initialized()
    a, b = lib.device_array(1000, dtype=np.float32), lib.device_array(1000, dtype=np.float32)
    pa, pb = a.device_ctypes_pointer.value, b.device_ctypes_pointer.value
    oa, ob = lib.rmmGetAllocationOffset(pa), lib.rmmGetAllocationOffset(pb)
    assert ob - oa == pb - pa and max(oa, ob) > 0, "both carved from the pool's one chunk"
    expected = 2 * np.arange(1000, dtype=np.float32) + 1
    a.copy_to_device(expected)
    log = lib.csv_log().splitlines()
    assert len(log) == 3 and all(os.path.basename(__file__) in row for row in log[1:]), log
    free, total = lib.rmmGetInfo()
    assert 0 < free <= total

    # New settings: the next arrays come from plain device memory, the pool's stay valid.
    cfg.use_pool_allocator = False
    cfg.enable_logging = False
    lib.initialize()
    c = lib.device_array(1000, dtype=np.float32)
    assert lib.rmmGetAllocationOffset(c.device_ctypes_pointer.value) == 0
    np.testing.assert_array_equal(a.copy_to_host(), expected)
    del a, b, c
    gc.collect()

    kept = lib.device_array(10)
    lib.finalize()
    assert not lib.is_initialized()
    with pytest.raises(legacy.RMMError) as e:
        lib.device_array(10)
    assert errcode(e) == "RMM_ERROR_NOT_INITIALIZED"
    with pytest.raises(legacy.RMMError):
        lib.finalize()
    del kept  # freed by finalize already: its finalizer does nothing
    gc.collect()
    lib.initialize()


def _read_through_ipc(handle, queue):
    """In a fresh process: opens the handle with Numba and sends back what the array holds."""
    try:
        with handle as array:
            queue.put(array.copy_to_host())
    except BaseException as e:  # report, rather than leave the parent waiting
        queue.put(repr(e))


def test_ipc_handle_of_a_pool_block_opens_in_another_process(nb, legacy, cfg):
    lib = legacy.librmm
    cfg.use_pool_allocator = True
    cfg.initial_pool_size = 32 << 20
    lib.initialize()
    values = np.arange(5000, dtype=np.int64) * 3 - 7
    # Two blocks of the pool's chunk: at least one lies past its start.
    arrays = [lib.to_device(values + i) for i in range(2)]
    offsets = [lib.rmmGetAllocationOffset(a.device_ctypes_pointer.value) for a in arrays]
    pick = int(np.argmax(offsets))
    shared, values, offset = arrays[pick], values + pick, offsets[pick]
    assert offset > 0
    handle = lib.get_ipc_handle(shared)
    assert handle._ipc_handle.offset == offset

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_read_through_ipc, args=(handle, queue))
    child.start()
    try:
        got = queue.get(timeout=300)
    finally:
        child.join(timeout=60)
    assert not isinstance(got, str), got
    np.testing.assert_array_equal(got, values)
    assert child.exitcode == 0
    del arrays, shared
    cfg.use_pool_allocator, cfg.initial_pool_size = False, 0
    lib.initialize()
