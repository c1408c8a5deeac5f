"""Module names, attributes, reprs and argument errors as RMM 26.10 has them (each checked against
RMM's wheel): no ``__all__`` where RMM's module has none, no Python-level helpers RMM keeps at C
level, Cython's messages for bad ints, the pool's size checks, and a callback's ``MemoryError`` as
RMM's ``rmm::out_of_memory`` reads."""

import importlib
import sys
import types

import pytest

import rmm
import rmm._cuda.gpu as cuda_gpu
from rmm import mr
from rmm._native import _device_buffer_mr, _device_buffer_stream
from rmm.pylibrmm.cuda_stream_pool import CudaStreamPool
from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream

# Modules that have no __all__ in RMM 26.10 (a star import takes every public name).
NO_ALL = [
    "rmm.statistics",
    "rmm._cuda.gpu",
    "rmm.librmm._logger",
    "rmm.pylibrmm.memory_resource.experimental",
    "rmm.pylibrmm.memory_resource._memory_resource",
    "rmm.pylibrmm.device_buffer",
    "rmm.pylibrmm.stream",
    "rmm.pylibrmm.logger",
    "rmm.pylibrmm.helper",
    "rmm.pylibrmm.utils",
    "rmm.pylibrmm.cuda_stream_pool",
    "rmm.allocators.cupy",
    "rmm.allocators.torch",
]


@pytest.mark.parametrize("name", NO_ALL)
def test_module_has_no_all_as_in_rmm(name):
    assert not hasattr(importlib.import_module(name), "__all__")


def _private(module):
    return sorted(n for n in vars(module) if n.startswith("_") and not n.startswith("__"))


def test_private_names_are_rmms():
    import rmm.pylibrmm.memory_resource._memory_resource as impl

    assert [n for n in _private(cuda_gpu) if n != "_native"] == []
    assert _private(importlib.import_module("rmm.librmm._logger")) == []
    assert [n for n in _private(impl) if n != "_native"] == ["_append_id", "_flush_logs", "_initialize"]
    assert _private(rmm.statistics) == ["_get_descriptive_name_of_object"]
    assert "_conflicts" not in vars(rmm)


def test_c_level_helpers_have_no_python_name():
    import rmm.pylibrmm.helper as helper
    import rmm.pylibrmm.utils as utils

    assert not hasattr(helper, "parse_bytes") and hasattr(helper, "pattern")
    assert [n for n in vars(utils) if not n.startswith("__")] == []
    assert rmm.pylibrmm.helper is helper  # a submodule of rmm.pylibrmm, as in RMM


def test_module_level_names_come_from_rmm_or_are_rmms_foreign_ones():
    import rmm.pylibrmm.memory_resource as pmr

    assert "importlib" not in vars(mr) and "_resource_names" not in vars(mr)
    assert "_all" not in vars(pmr)
    assert "IntEnum" not in vars(importlib.import_module("rmm.librmm._logger"))
    assert "annotations" not in vars(rmm.statistics) and rmm.statistics.rmm is rmm
    assert mr.experimental is importlib.import_module("rmm.mr.experimental")


def test_gpu_annotations_name_cuda_python_types():
    import inspect

    assert list(inspect.signature(cuda_gpu.getDeviceAttribute).parameters) == ["attr", "device"]
    assert cuda_gpu.getDeviceAttribute.__annotations__["attr"] == "runtime.cudaDeviceAttr"
    assert cuda_gpu.getDeviceProperties.__annotations__["return"] == "runtime.cudaDeviceProp"


def test_stream_repr_is_the_default_object_repr():
    assert "__repr__" not in vars(Stream)
    assert repr(DEFAULT_STREAM).startswith("<rmm.pylibrmm.stream.Stream object at 0x")


def test_stream_pool_size_errors_are_cythons():
    with pytest.raises(OverflowError, match="^can't convert negative value to size_t$"):
        CudaStreamPool(-1)
    with pytest.raises(TypeError, match="^an integer is required$"):
        CudaStreamPool("4")
    with pytest.raises(RuntimeError, match="^Stream pool size must be greater than zero$"):
        CudaStreamPool(0)


def test_set_device_with_a_string_is_cythons_type_error():
    with pytest.raises(TypeError, match="^an integer is required$"):
        cuda_gpu.setDevice("0")


def test_pool_sizes_are_checked_in_rmms_order(host_mr):
    with pytest.raises(RuntimeError, match="^Error, Initial pool size required to be a multiple of 256 bytes$"):
        mr.PoolMemoryResource(host_mr, initial_pool_size=1000)
    with pytest.raises(RuntimeError, match="^Error, Maximum pool size required to be a multiple of 256 bytes$"):
        mr.PoolMemoryResource(host_mr, initial_pool_size=2048, maximum_pool_size=1000)
    with pytest.raises(OverflowError, match="^can't convert negative value to size_t$"):
        mr.PoolMemoryResource(host_mr, initial_pool_size=-1)


def test_callback_memory_error_reads_as_rmms_out_of_memory(host_mr):
    def allocate(size, stream):
        raise MemoryError("no memory")

    cb = mr.CallbackMemoryResource(allocate, lambda p, n, s: None)
    with pytest.raises(MemoryError, match="^std::bad_alloc: out_of_memory: no memory$"):
        cb.allocate(16)
    with pytest.raises(MemoryError, match="^std::bad_alloc: out_of_memory: no memory$"):
        mr.StatisticsResourceAdaptor(cb).allocate(16)


def test_failure_callback_memory_error_reads_as_rmms_out_of_memory(host_mr):
    def refuse(nbytes):
        raise MemoryError("no memory")

    limited = mr.LimitingResourceAdaptor(host_mr, 128)
    with pytest.raises(MemoryError, match="^std::bad_alloc: out_of_memory: no memory$"):
        mr.FailureCallbackResourceAdaptor(limited, refuse).allocate(1024)


def test_enable_logging_names_every_device_file_after_the_current_device(gpu, tmp_path):  # noqa: F811
    # RMM makes every device's LoggingResourceAdaptor on the current device, so each file name
    # carries the current device's id.
    if cuda_gpu.getDeviceCount() < 2:
        pytest.skip("needs two devices")
    cuda_gpu.setDevice(0)
    try:
        rmm.reinitialize(devices=[0, 1])
        rmm.enable_logging(str(tmp_path / "both.csv"))
        names = rmm.get_log_filenames()
        assert names[0] == names[1] == str(tmp_path / "both.dev0.csv")
    finally:
        rmm.disable_logging()
        rmm.reinitialize()


def test_none_as_a_resource_is_a_type_error_not_a_crash():
    # RMM dies of SIGSEGV here (docs/differences.md#set-resource-none).
    with pytest.raises(TypeError):
        mr.set_current_device_resource(None)
    with pytest.raises(TypeError):
        mr.set_per_device_resource(0, None)


def test_cuda_async_resource_has_no_pool_handle_method():
    # RMM's CudaAsyncMemoryResource has none; its view and the managed async resource have one.
    assert not hasattr(mr.CudaAsyncMemoryResource, "pool_handle")
    assert hasattr(mr.CudaAsyncViewMemoryResource, "pool_handle")
    assert hasattr(mr.experimental.CudaAsyncManagedMemoryResource, "pool_handle")


def test_cupy_hook_without_cupy_raises_rmms_module_not_found(monkeypatch):
    import rmm.allocators.cupy as hook

    # An importable "cupy", so that only the module's `cupy = None` can make the hook refuse.
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setattr(hook, "cupy", None)
    with pytest.raises(ModuleNotFoundError, match="^No module named 'cupy'$"):
        hook.rmm_cupy_allocator(10)


def test_deallocate_callback_exception_is_rmms_system_error(host_mr):
    def deallocate(ptr, nbytes, stream):
        host_mr.deallocate(ptr, nbytes, stream)
        raise ValueError("free failed")

    cb = mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s), deallocate)
    for resource in (cb, mr.StatisticsResourceAdaptor(cb)):
        p = resource.allocate(100)
        with pytest.raises(SystemError, match="returned a result with an exception set") as info:
            resource.deallocate(p, 100)
        assert "free failed" in str(info.value.__cause__)


def test_reinitialize_argument_errors_are_rmms(gpu):  # noqa: F811 (the fixture)
    try:
        with pytest.raises(OverflowError, match="^can't convert negative value to size_t$"):
            rmm.reinitialize(pool_allocator=True, initial_pool_size=-1)
        with pytest.raises(TypeError, match="^an integer is required$"):
            rmm.reinitialize(devices="0")
        with pytest.raises(RuntimeError, match="^Error, Initial pool size required to be a multiple of 256 bytes$"):
            rmm.reinitialize(pool_allocator=True, initial_pool_size=1000)
        with pytest.raises(cuda_gpu.CUDARuntimeError, match="^cudaErrorInvalidDevice: invalid device ordinal$"):
            rmm.reinitialize(devices=99)
    finally:
        rmm.reinitialize()


def test_buffer_and_stream_on_a_gpu_as_rmms(gpu):  # noqa: F811 (the fixture)
    buf = rmm.DeviceBuffer(size=16)
    with pytest.raises(AttributeError):
        buf.mr  # noqa: B018 (the access is the test)
    with pytest.raises(AttributeError):
        buf.stream  # noqa: B018
    assert _device_buffer_mr(buf) is mr.get_current_device_resource()
    assert _device_buffer_stream(buf) is DEFAULT_STREAM
    assert repr(Stream()).startswith("<rmm.pylibrmm.stream.Stream object at 0x")
