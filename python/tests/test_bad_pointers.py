"""No crash on a bad pointer: every call that takes a raw address from the caller asks what the
memory is first and raises ValueError for an address no copy can use (null, unmapped, or a range
that runs off its memory into nothing), where the driver would read it on the CPU and kill the
process. Memory of every kind a copy accepts still passes: device, managed, pinned and pageable
host memory.

Without a GPU every address is host memory, and the checks run all the same: the sweep below is
a host test."""

import ctypes
import mmap

import numpy as np
import pytest

import rmm
from rmm.pylibrmm.device_buffer import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
)

from test_device_buffer import FakeCudaArray

PAGE = mmap.PAGESIZE


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


@pytest.fixture(scope="module")
def page_before_a_hole():
    """The address of a mapped page whose next page is unmapped."""
    libc = _libc()
    base = libc.mmap(None, 2 * PAGE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert libc.munmap(base + PAGE, PAGE) == 0
    yield base
    libc.munmap(base, PAGE)


def _bad_ranges(hole_page):
    # (address, bytes, what the message says)
    return {
        "eight": (8, 16, "unmapped"),
        "low_page": (0x1000, 64, "unmapped"),
        "kernel_half": (0xFFFF_8000_0000_0000, 64, "unmapped"),
        "past_the_end": (2**64 - 8, 16, "end of the address space"),
        "runs_into_a_hole": (hole_page + PAGE - 8, 16, "unmapped"),
    }


CALLS = {
    "DeviceBuffer(ptr=)": lambda p, n, mr: DeviceBuffer(ptr=p, size=n, mr=mr),
    "rmm.DeviceBuffer(ptr=)": lambda p, n, mr: rmm.DeviceBuffer(ptr=p, size=n, mr=mr),
    "copy_from_device": lambda p, n, mr: DeviceBuffer(size=n, mr=mr).copy_from_device(FakeCudaArray(p, (n,))),
    "copy_ptr_to_host": lambda p, n, mr: copy_ptr_to_host(p, bytearray(n)),
    "copy_host_to_ptr": lambda p, n, mr: copy_host_to_ptr(bytes(n), p),
    "copy_device_to_ptr src": lambda p, n, mr: copy_device_to_ptr(p, DeviceBuffer(size=n, mr=mr).ptr, n),
    "copy_device_to_ptr dst": lambda p, n, mr: copy_device_to_ptr(DeviceBuffer(size=n, mr=mr).ptr, p, n),
}

BAD = ["eight", "low_page", "kernel_half", "past_the_end", "runs_into_a_hole"]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("call", list(CALLS))
def test_bad_pointer_sweep_raises_value_error(host_mr, page_before_a_hole, call, bad):
    """7 calls x 5 bad ranges = 35 cases, none of which may crash. (The buffers come from a host
    resource: no GPU needed.)"""
    addr, n, words = _bad_ranges(page_before_a_hole)[bad]
    with pytest.raises(ValueError, match=rf"bad pointer {addr:#x} \({n} bytes\).*{words}"):
        CALLS[call](addr, n, host_mr)


def test_null_is_refused_where_a_copy_needs_it(host_mr):
    with pytest.raises(ValueError, match="null"):
        copy_ptr_to_host(0, bytearray(4))
    with pytest.raises(ValueError, match="null"):
        copy_device_to_ptr(0, DeviceBuffer(size=4, mr=host_mr).ptr, 4)
    # As in RMM, DeviceBuffer(ptr=0) copies nothing, and so does any address with size 0.
    assert DeviceBuffer(ptr=0, size=4, mr=host_mr).size == 4
    assert DeviceBuffer(ptr=8, size=0, mr=host_mr).size == 0
    copy_ptr_to_host(8, bytearray(0))


def test_a_read_only_destination_is_refused(host_mr):
    libc = _libc()
    page = libc.mmap(None, PAGE, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    try:
        with pytest.raises(ValueError, match="not writable"):
            copy_host_to_ptr(bytes(16), page)
        # Reading it is fine.
        assert DeviceBuffer(ptr=page, size=16, mr=host_mr).tobytes() == bytes(16)
    finally:
        libc.munmap(page, PAGE)


def test_good_host_memory_passes_and_is_copied(host_mr, page_before_a_hole):
    data = np.arange(64, dtype=np.uint8)
    buf = DeviceBuffer(ptr=data.ctypes.data, size=64, mr=host_mr)
    assert buf.tobytes() == data.tobytes()
    # The last bytes before the hole are memory.
    ctypes.memset(page_before_a_hole + PAGE - 16, 7, 16)
    assert DeviceBuffer(ptr=page_before_a_hole + PAGE - 16, size=16, mr=host_mr).tobytes() == bytes([7] * 16)


def test_a_refused_pointer_leaves_the_resource_as_it_was(host_mr):
    stats = rmm.mr.StatisticsResourceAdaptor(host_mr)
    with pytest.raises(ValueError):
        DeviceBuffer(ptr=8, size=16, mr=stats)
    counts = stats.allocation_counts
    assert (counts.current_bytes, counts.total_count) == (0, 0)


def test_librmm_cffi_device_array_from_ptr_refuses_bad_memory():
    """Checked before Numba is imported: runs without Numba or a GPU."""
    from librmm_cffi import librmm

    for bad in (8, 0x1000):
        with pytest.raises(ValueError, match=f"bad pointer {bad:#x}"):
            librmm.device_array_from_ptr(bad, 4, dtype=np.float64)


@pytest.mark.parametrize("kind", ["cuda", "managed", "pinned"])
def test_device_managed_and_pinned_memory_pass(gpu, kind):
    mr = {
        "cuda": rmm.mr.CudaMemoryResource,
        "managed": rmm.mr.ManagedMemoryResource,
        "pinned": rmm.mr.PinnedHostMemoryResource,
    }[kind]()
    src = DeviceBuffer(size=1 << 20, mr=mr) if kind != "pinned" else None
    if src is None:
        ptr = mr.allocate(1 << 20)
        ctypes.memset(ptr, 3, 1 << 20)
    else:
        src.copy_from_host(np.full(1 << 20, 3, dtype=np.uint8))
        ptr = src.ptr
    copy = DeviceBuffer(ptr=ptr, size=1 << 20)
    assert copy.tobytes() == bytes([3]) * (1 << 20)
    copy.copy_from_device(FakeCudaArray(ptr + 16, (64,)))
    host = bytearray(64)
    copy_ptr_to_host(ptr + (1 << 20) - 64, host)
    assert bytes(host) == bytes([3]) * 64
    if src is None:
        mr.deallocate(ptr, 1 << 20)


def test_device_allocation_followed_by_nothing_is_refused(gpu):
    """A range from device memory running past its allocation into unmapped addresses: the
    last byte is asked too."""
    buf = DeviceBuffer(size=1 << 21, mr=rmm.mr.CudaMemoryResource())
    with pytest.raises(ValueError, match="bad pointer"):
        DeviceBuffer(ptr=buf.ptr, size=1 << 40)
