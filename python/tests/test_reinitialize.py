"""rmm.reinitialize, its hooks, and the per-device logging switches."""

import csv

import pytest

import rmm
import rmm.mr as mr
from rmm._cuda import gpu as cuda_gpu
from rmm.pylibrmm.memory_resource import _memory_resource as _mr


@pytest.fixture
def clean_devices():
    """Leaves the per-device table as a fresh process has it."""
    rmm._native._clear_per_device_resources()
    yield
    rmm._native._clear_per_device_resources()


def test_reinitialize_signature():
    import inspect

    params = inspect.signature(rmm.reinitialize).parameters
    assert {k: v.default for k, v in params.items()} == {
        "pool_allocator": False,
        "managed_memory": False,
        "initial_pool_size": None,
        "maximum_pool_size": None,
        "devices": 0,
        "logging": False,
        "log_file_name": None,
        "virtual_pool_allocator": False,
    }


def test_rmm_error():
    e = rmm.RMMError(3, "message")
    assert e.errcode == 3 and str(e) == "message"


def test_hooks_run_in_reverse_order(monkeypatch):
    order = []
    monkeypatch.setattr("rmm.rmm._initialize", lambda **kw: order.append(("init", kw["devices"])))

    def first(tag, *, suffix):
        order.append(tag + suffix)

    def second():
        order.append("second")

    assert rmm.register_reinitialize_hook(first, "first", suffix="!") is first
    rmm.register_reinitialize_hook(second)
    rmm.register_reinitialize_hook(second)
    try:
        rmm.reinitialize(devices=[0])
        assert order == ["second", "second", "first!", ("init", [0])]
        rmm.unregister_reinitialize_hook(second)  # every registration goes
        order.clear()
        rmm.reinitialize()
        assert order == ["first!", ("init", 0)]
    finally:
        rmm.unregister_reinitialize_hook(first)
        rmm.unregister_reinitialize_hook(second)
    order.clear()
    rmm.reinitialize()
    assert order == [("init", 0)]


def test_append_id():
    assert _mr._append_id("hello.txt", 1) == "hello.dev1.txt"
    assert _mr._append_id("rmm", 0) == "rmm.dev0"


def test_is_initialized():
    assert rmm.is_initialized() and mr.is_initialized()


def test_logging_switches_over_host(host_mr, tmp_path, clean_devices):
    mr.set_per_device_resource(0, host_mr)
    assert rmm.get_log_filenames() == {0: None}
    rmm.enable_logging(log_file_name=str(tmp_path / "log.csv"))
    logged = mr.get_per_device_resource(0)
    assert isinstance(logged, mr.LoggingResourceAdaptor) and logged.upstream_mr is host_mr
    name = str(tmp_path / "log.dev0.csv")
    assert rmm.get_log_filenames() == {0: name}
    rmm.enable_logging(log_file_name=str(tmp_path / "other.csv"))  # already logging: unchanged
    assert mr.get_per_device_resource(0) is logged
    p = logged.allocate(77)
    logged.deallocate(p, 77)
    _mr._flush_logs()
    with open(name, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Thread", "Time", "Action", "Pointer", "Size", "Stream"]
    assert [(r[2], r[4]) for r in rows[1:]] == [("allocate", "77"), ("free", "77")]
    rmm.disable_logging()
    assert mr.get_per_device_resource(0) is host_mr
    assert rmm.get_log_filenames() == {0: None}


def test_enable_logging_needs_a_name(host_mr, clean_devices, monkeypatch):
    monkeypatch.delenv("RMM_LOG_FILE", raising=False)
    mr.set_per_device_resource(0, host_mr)
    with pytest.raises(ValueError):
        rmm.enable_logging()
    assert mr.get_per_device_resource(0) is host_mr


def test_without_a_device_reinitialize_warns(clean_devices):
    """RMM warns where the driver finds no device (cudaErrorNoDevice) and raises the error where
    there is no driver at all (cudaErrorInsufficientDriver, as the CUDA runtime answers)."""
    try:
        cuda_gpu.getDevice()
    except cuda_gpu.CUDARuntimeError as e:
        assert int(e.status) in (35, 100)
        if int(e.status) == 100:
            with pytest.warns(UserWarning, match="cudaErrorNoDevice"):
                rmm.reinitialize(pool_allocator=True)
        else:
            with pytest.raises(cuda_gpu.CUDARuntimeError, match="^cudaErrorInsufficientDriver: "):
                rmm.reinitialize(pool_allocator=True)
    else:
        pytest.skip("a device is present")


# --- GPU -------------------------------------------------------------------------------------


def test_gpu_queries(gpu):
    count = cuda_gpu.getDeviceCount()
    assert count >= 1
    assert cuda_gpu.getDevice() in range(count)
    assert cuda_gpu.driverGetVersion() >= 12000
    assert cuda_gpu.runtimeGetVersion() >= 12000
    with pytest.raises(cuda_gpu.CUDARuntimeError) as info:
        cuda_gpu.setDevice(count)
    assert info.value.status == 101


def test_reinitialize_default(gpu, clean_devices):
    rmm.reinitialize()
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource
    assert rmm.get_log_filenames() == {0: None}


def test_reinitialize_pool(gpu, clean_devices):
    rmm.reinitialize(pool_allocator=True, initial_pool_size="16MiB", maximum_pool_size=1 << 26)
    pool = mr.get_current_device_resource()
    assert isinstance(pool, mr.PoolMemoryResource)
    assert type(pool.upstream_mr) is mr.CudaMemoryResource
    assert pool.pool_size() == 16 << 20
    p = pool.allocate(1000)
    pool.deallocate(p, 1000)
    with pytest.raises(MemoryError):
        pool.allocate(1 << 27)


def test_reinitialize_managed(gpu, clean_devices):
    rmm.reinitialize(managed_memory=True)
    assert type(mr.get_current_device_resource()) is mr.ManagedMemoryResource
    rmm.reinitialize(pool_allocator=True, managed_memory=True, initial_pool_size="2MiB")
    pool = mr.get_current_device_resource()
    assert type(pool.upstream_mr) is mr.ManagedMemoryResource


def test_reinitialize_logging(gpu, clean_devices, tmp_path):
    rmm.reinitialize(logging=True, log_file_name=str(tmp_path / "r.log"), devices=[0])
    current = mr.get_current_device_resource()
    assert isinstance(current, mr.LoggingResourceAdaptor)
    assert rmm.get_log_filenames() == {0: str(tmp_path / "r.dev0.log")}
    p = current.allocate(256)
    current.deallocate(p, 256)
    current.flush()
    with open(tmp_path / "r.dev0.log") as f:
        lines = f.read().splitlines()
    assert lines[0] == "Thread,Time,Action,Pointer,Size,Stream" and len(lines) == 3
    rmm.disable_logging()
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource


def test_reinitialize_every_device(gpu, clean_devices):
    devices = list(range(cuda_gpu.getDeviceCount()))
    rmm.reinitialize(pool_allocator=True, initial_pool_size="4MiB", devices=devices)
    for d in devices:
        assert isinstance(mr.get_per_device_resource(d), mr.PoolMemoryResource)
    assert cuda_gpu.getDevice() == 0


def test_reinitialize_bad_device(gpu, clean_devices):
    with pytest.raises(cuda_gpu.CUDARuntimeError):
        rmm.reinitialize(devices=[cuda_gpu.getDeviceCount()])
    assert cuda_gpu.getDevice() == 0
