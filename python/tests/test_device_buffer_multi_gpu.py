"""Two GPUs: a DeviceBuffer made on one device and then grown, copied, read, written or freed
while the other device is current does all of it on its own device, as RMM's device_buffer does.
A CallbackMemoryResource that refuses to allocate with another device current than its own (the
user's device-checking adaptor) is the witness. Skipped with fewer than two GPUs."""

import gc

import numpy as np
import pytest
from conftest import GPU_SKIP_REASON

import rmm
import rmm.mr as mr
from rmm._cuda import gpu as cuda_gpu


def _skip_reason():
    if GPU_SKIP_REASON is not None:
        return GPU_SKIP_REASON
    count = cuda_gpu.getDeviceCount()
    return None if count >= 2 else f"needs two CUDA devices, this machine has {count}"


SKIP_REASON = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


@pytest.fixture(autouse=True)
def restore_device():
    before = cuda_gpu.getDevice()
    yield
    cuda_gpu.setDevice(before)


class Checking:
    """A resource of `device` (made with it current) that records every call made with another
    device current; allocating then raises."""

    def __init__(self, device):
        cuda_gpu.setDevice(device)
        self.device = device
        self.upstream = mr.CudaMemoryResource()
        self.wrong = []
        self.outstanding = 0
        self.mr = mr.CallbackMemoryResource(self._allocate, self._deallocate)

    def _allocate(self, size, stream):
        now = cuda_gpu.getDevice()
        if now != self.device:
            self.wrong.append(("allocate", size, now))
            raise RuntimeError(f"allocate on device {self.device} with device {now} current")
        self.outstanding += size
        return self.upstream.allocate(size, stream)

    def _deallocate(self, ptr, size, stream):
        now = cuda_gpu.getDevice()
        if now != self.device:
            self.wrong.append(("deallocate", size, now))
        self.outstanding -= size
        self.upstream.deallocate(ptr, size, stream)


@pytest.mark.parametrize("made_on", [0, 1])
def test_buffer_members_run_on_the_buffers_device(made_on):
    other = 1 - made_on
    checking = Checking(made_on)
    data = np.arange(1000, dtype=np.uint8)
    cuda_gpu.setDevice(made_on)
    buf = rmm.DeviceBuffer(size=1000, mr=checking.mr)
    buf.copy_from_host(data)

    cuda_gpu.setDevice(other)
    buf.resize(5000)  # grows: a new allocation on `made_on`
    buf.reserve(8000)
    buf.resize(700)  # within the capacity: nothing allocated
    assert buf.size == 700
    assert buf.capacity() == 8000
    assert cuda_gpu.getDevice() == other, "a member left the buffer's device current"

    copy = buf.copy()  # same resource, so the same device
    assert bytes(copy.copy_to_host()) == data[:700].tobytes()
    assert buf.tobytes() == data[:700].tobytes()
    buf.copy_from_host(np.full(10, 7, dtype=np.uint8))
    assert buf.tobytes()[:11] == bytes([7] * 10) + data[10:11].tobytes()
    buf.copy_from_device(copy)
    assert buf.tobytes() == data[:700].tobytes()

    del buf, copy
    gc.collect()
    assert cuda_gpu.getDevice() == other
    assert checking.wrong == []
    assert checking.outstanding == 0


def test_buffers_of_both_devices_side_by_side():
    checking = [Checking(0), Checking(1)]
    buffers = []
    for d in (0, 1):
        cuda_gpu.setDevice(d)
        buffers.append(rmm.DeviceBuffer(size=256, mr=checking[d].mr))
    for round_ in range(4):
        cuda_gpu.setDevice(round_ % 2)
        for b in buffers:
            b.resize(b.size * 2)
    del b  # the loop's name holds the last buffer
    cuda_gpu.setDevice(1)
    buffers.clear()
    gc.collect()
    assert [c.wrong for c in checking] == [[], []]
    assert [c.outstanding for c in checking] == [0, 0]
    assert cuda_gpu.getDevice() == 1
