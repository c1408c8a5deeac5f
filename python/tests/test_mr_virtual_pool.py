"""rmm.mr.VirtualPoolMemoryResource and rmm.reinitialize(virtual_pool_allocator=True): argument
errors on any machine; mapping, release, the current resource and the PyTorch hook on a GPU."""

import inspect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rmm
import rmm._cuda.gpu
import rmm.mr as mr
from rmm.pylibrmm.memory_resource import _memory_resource as _mr
from conftest import GPU_SKIP_REASON

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
GiB = 1 << 30


@pytest.fixture
def clean_devices():
    """Leaves the per-device table as a fresh process has it."""
    rmm._native._clear_per_device_resources()
    yield
    rmm._native._clear_per_device_resources()


# --- Any machine ---------------------------------------------------------------------------------


def test_exported_from_rmm_mr():
    assert mr.VirtualPoolMemoryResource is rmm.pylibrmm.memory_resource.VirtualPoolMemoryResource
    assert "VirtualPoolMemoryResource" in mr.__all__
    assert issubclass(mr.VirtualPoolMemoryResource, mr.DeviceMemoryResource)
    assert mr.VirtualPoolMemoryResource.__doc__
    for method in ("release", "release_above", "mapped_bytes", "reserved_bytes", "granularity", "pool_size"):
        assert getattr(mr.VirtualPoolMemoryResource, method).__doc__, method


def test_signature():
    params = inspect.signature(mr.VirtualPoolMemoryResource).parameters
    assert {k: v.default for k, v in params.items()} == {
        "maximum_pool_size": None,
        "initial_pool_size": None,
        "peer_devices": None,
        "device": None,
        "granularity": None,
        "export_posix_fd": False,
    }
    for name in ("peer_devices", "device", "granularity", "export_posix_fd"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_a_zero_maximum_is_a_value_error():
    with pytest.raises(ValueError, match="maximum_pool_size"):
        mr.VirtualPoolMemoryResource(0)


def test_an_initial_size_above_the_maximum_is_a_value_error():
    with pytest.raises(ValueError, match="exceeds maximum_pool_size"):
        mr.VirtualPoolMemoryResource("1MiB", "2MiB")


def test_a_zero_granularity_is_a_value_error():
    with pytest.raises(ValueError, match="granularity"):
        mr.VirtualPoolMemoryResource(GiB, granularity=0)


def test_a_size_that_is_no_size_is_a_value_error():
    with pytest.raises(ValueError):
        mr.VirtualPoolMemoryResource("lots")


def test_reinitialize_takes_the_option_as_a_keyword():
    param = inspect.signature(rmm.reinitialize).parameters["virtual_pool_allocator"]
    assert param.default is False and param.kind is inspect.Parameter.KEYWORD_ONLY
    assert "virtual_pool_allocator" in rmm.reinitialize.__doc__


@pytest.mark.parametrize("other", ["pool_allocator", "managed_memory"])
def test_reinitialize_refuses_a_second_allocator_before_any_hook(other):
    ran = []
    hook = rmm.register_reinitialize_hook(lambda: ran.append(True))
    try:
        with pytest.raises(ValueError, match="virtual_pool_allocator"):
            rmm.reinitialize(virtual_pool_allocator=True, **{other: True})
        with pytest.raises(ValueError, match="virtual_pool_allocator"):
            _mr._initialize(virtual_pool_allocator=True, **{other: True})
    finally:
        rmm.unregister_reinitialize_hook(hook)
    assert ran == []


def test_without_a_device_construction_raises():
    if GPU_SKIP_REASON is None:
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError):
        mr.VirtualPoolMemoryResource(GiB)


# --- GPU -----------------------------------------------------------------------------------------


@pytest.fixture
def vmm(gpu):
    """A CUDA device with virtual memory management (skips otherwise)."""
    try:
        return mr.VirtualPoolMemoryResource(GiB)
    except RuntimeError as e:
        if "virtual memory management" in str(e):
            pytest.skip(str(e))
        raise


def test_sizes_are_whole_granules(vmm):
    pool = mr.VirtualPoolMemoryResource(8 * GiB, "64MiB")
    g = pool.granularity()
    assert g > 0 and pool.reserved_bytes() >= 8 * GiB and pool.reserved_bytes() % g == 0
    assert pool.mapped_bytes() >= 64 * MiB and pool.mapped_bytes() % g == 0
    assert pool.pool_size() == pool.mapped_bytes()


def test_the_default_maximum_is_the_devices_memory(vmm):
    _, total = rmm._native.available_device_memory()
    pool = mr.VirtualPoolMemoryResource()
    assert pool.reserved_bytes() >= total
    assert pool.mapped_bytes() == 0


def test_release_unmaps_and_regrowth_keeps_the_address(vmm):
    pool = mr.VirtualPoolMemoryResource(16 * GiB)
    nbytes = 3 * GiB
    ptr = pool.allocate(nbytes)
    assert pool.mapped_bytes() >= nbytes
    pool.deallocate(ptr, nbytes)
    assert pool.release() >= nbytes
    assert pool.mapped_bytes() == 0
    again = pool.allocate(nbytes)
    assert again == ptr
    pool.deallocate(again, nbytes)


def test_release_above_keeps_what_it_is_asked_to(vmm):
    pool = mr.VirtualPoolMemoryResource(8 * GiB)
    ptr = pool.allocate(GiB)
    pool.deallocate(ptr, GiB)
    before = pool.mapped_bytes()
    freed = pool.release_above(256 * MiB)
    assert before - freed == pool.mapped_bytes()
    assert pool.mapped_bytes() <= 256 * MiB + pool.granularity()


def test_an_exhausted_reservation_is_a_memory_error(vmm):
    pool = mr.VirtualPoolMemoryResource(GiB)
    with pytest.raises(MemoryError):
        pool.allocate(pool.reserved_bytes() + 1)


def test_memory_not_made_exportable_says_so(vmm):
    pool = mr.VirtualPoolMemoryResource(GiB)
    ptr = pool.allocate(MiB)
    with pytest.raises(RuntimeError, match="exportable"):
        pool.export_posix_fd(ptr)
    pool.deallocate(ptr, MiB)


def test_exported_memory_gives_a_file_descriptor(vmm):
    pool = mr.VirtualPoolMemoryResource(GiB, export_posix_fd=True)
    ptr = pool.allocate(MiB)
    try:
        fd = pool.export_posix_fd(ptr)
    except RuntimeError as e:
        assert "exportable" in str(e)  # the device cannot export POSIX file descriptors
    else:
        assert fd >= 0
        os.close(fd)
    pool.deallocate(ptr, MiB)


def test_a_buffer_round_trips_through_it(vmm):
    pool = mr.VirtualPoolMemoryResource(GiB)
    data = np.frombuffer(bytes(range(256)) * 4096, dtype=np.uint8)
    buf = rmm.DeviceBuffer(size=data.size, mr=pool)
    buf.copy_from_host(data)
    np.testing.assert_array_equal(buf.copy_to_host(), data)
    assert pool.mapped_bytes() >= data.size


def test_reinitialize_makes_it_every_devices_resource(vmm, clean_devices):
    rmm.reinitialize(virtual_pool_allocator=True, initial_pool_size="64MiB", maximum_pool_size="4GiB")
    try:
        current = mr.get_current_device_resource()
        assert isinstance(current, mr.VirtualPoolMemoryResource)
        assert current.reserved_bytes() >= 4 * GiB
        assert current.mapped_bytes() >= 64 * MiB
        data = b"\x07" * (8 * MiB)
        assert rmm.DeviceBuffer.to_device(data).copy_to_host().tobytes() == data
    finally:
        rmm.reinitialize()
    assert not isinstance(mr.get_current_device_resource(), mr.VirtualPoolMemoryResource)


TRAIN = """
import json
import torch
import rmm
import rmm.mr as mr
from rmm.allocators.torch import rmm_torch_allocator

rmm.reinitialize(virtual_pool_allocator=True, maximum_pool_size="8GiB")
pool = mr.get_current_device_resource()
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
torch.manual_seed(0)
x = torch.randn(512, 32, device="cuda")
y = torch.sin(x.sum(dim=1, keepdim=True))
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for step in range(200):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
mapped = pool.mapped_bytes()
del big
torch.cuda.synchronize()
released = pool.release()
print(json.dumps({"first": losses[0], "last": losses[-1], "mapped": mapped, "released": released,
                  "virtual": type(pool).__name__}))
"""


def test_the_torch_allocator_runs_over_it(vmm):
    """The PyTorch hook allocates from the current device resource, so it needs nothing of its
    own to run over a virtual pool."""
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRAIN)], cwd=HERE, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["virtual"] == "VirtualPoolMemoryResource"
    assert out["last"] < out["first"]
    assert out["mapped"] >= 256 << 20
    assert out["released"] >= 128 << 20  # whole granules of the freed block and the free tail


def test_a_device_given_is_used_and_the_current_device_kept(vmm):
    before = rmm._cuda.gpu.getDevice()
    pool = mr.VirtualPoolMemoryResource(GiB, "2MiB", device=before)
    assert rmm._cuda.gpu.getDevice() == before
    assert pool.mapped_bytes() >= 2 * MiB


def test_a_peer_device_is_given_access(vmm):
    if rmm._cuda.gpu.getDeviceCount() < 2:
        pytest.skip("fewer than two CUDA devices")
    pool = mr.VirtualPoolMemoryResource(GiB, device=0, peer_devices=[1])
    ptr = pool.allocate(MiB)
    pool.deallocate(ptr, MiB)
