"""Argument values and answers that differed from RMM 26.10's Python layer (checked against its
Cython sources and its recorded behaviour): sizes converted as Cython converts a `size_t`, the
`bool` of `capture_stacks`, the exceptions of pool and arena constructors, the attributes
`DeviceBuffer` does not have, and the requests that reach a callback."""

import math

import pytest

import rmm
from rmm import mr
from rmm._native import _device_buffer_mr, _device_buffer_stream
from rmm.pylibrmm.stream import DEFAULT_STREAM

# --- sizes: Cython's size_t conversion --------------------------------------------------------


def test_allocate_takes_a_float_size_truncated(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    p = stats.allocate(1.5)
    assert p != 0
    assert stats.allocation_counts.current_bytes == 1
    stats.deallocate(p, 1.9)
    assert stats.allocation_counts.current_bytes == 0


@pytest.mark.parametrize("bad, error", [
    (-1, OverflowError), (-1.5, OverflowError), (math.inf, OverflowError), (1 << 70, OverflowError),
    (math.nan, ValueError), ("10", TypeError), (None, TypeError), (b"1", TypeError),
])
def test_allocate_refuses_what_cython_refuses(host_mr, bad, error):
    with pytest.raises(error):
        host_mr.allocate(bad)
    with pytest.raises(error):
        host_mr.deallocate(bad, 10)
    # The resource is untouched by the refusals.
    p = host_mr.allocate(64)
    host_mr.deallocate(p, 64)


def test_size_arguments_of_constructors_and_buffers_take_floats(host_mr):
    limiting = mr.LimitingResourceAdaptor(host_mr, 1000.9)
    assert limiting.get_allocation_limit() == 1000
    fixed = mr.FixedSizeMemoryResource(host_mr, 256.5, 2.0)
    p = fixed.allocate(100)
    fixed.deallocate(p, 100)
    buf = rmm.DeviceBuffer(size=10.7, mr=host_mr)
    assert buf.size == 10
    buf.resize(3.2)
    assert buf.size == 3
    buf.reserve(64.0)
    assert buf.capacity() >= 64
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size="10", mr=host_mr)
    with pytest.raises(OverflowError):
        rmm.DeviceBuffer(size=-1.0, mr=host_mr)


@pytest.mark.parametrize("flag, captures", [(1, True), ("yes", True), (None, False), (0, False),
                                            ("", False)])
def test_tracking_capture_stacks_is_read_for_its_truth(host_mr, flag, captures):
    tracking = mr.TrackingResourceAdaptor(host_mr, flag)
    p = tracking.allocate(64)
    report = tracking.get_outstanding_allocations_str()
    assert (" : callstack:" in report) is captures
    tracking.deallocate(p, 64)


# --- pool and arena constructors: RMM's logic_error is a RuntimeError -------------------------


@pytest.mark.parametrize("args", [(1000,), ("1",), ("1KB",), ("1.5MB",), (1 << 20, 1000 + (1 << 20))])
def test_pool_sizes_not_multiples_of_256_are_runtime_errors(host_mr, args):
    with pytest.raises(RuntimeError):
        mr.PoolMemoryResource(host_mr, *args)


def test_pool_size_of_wrong_type_or_too_large(host_mr):
    with pytest.raises(TypeError):
        mr.PoolMemoryResource(host_mr, 1.5e6)
    with pytest.raises(ValueError):
        mr.PoolMemoryResource(host_mr, "lots")
    with pytest.raises(MemoryError):
        mr.PoolMemoryResource(host_mr, 1 << 60)
    assert mr.PoolMemoryResource(host_mr, "1KiB").pool_size() == 1024


@pytest.mark.parametrize("size", [0, 1 << 10])
def test_arena_too_small_is_a_runtime_error(host_mr, size):
    with pytest.raises(RuntimeError):
        mr.ArenaMemoryResource(host_mr, size)


# --- what RMM's classes do not expose ----------------------------------------------------------


def test_device_buffer_has_no_mr_or_stream_attribute(host_mr):
    buf = rmm.DeviceBuffer(size=8, mr=host_mr)
    for name in ("mr", "stream"):
        assert not hasattr(rmm.DeviceBuffer, name)
        with pytest.raises(AttributeError):
            getattr(buf, name)
    assert _device_buffer_mr(buf) is host_mr
    assert _device_buffer_stream(buf) is DEFAULT_STREAM


# --- the base class made directly ------------------------------------------------------------


def test_base_class_can_be_made_but_has_no_memory(host_mr):
    class Mine(mr.DeviceMemoryResource):
        pass

    for base in (mr.DeviceMemoryResource(), mr.DeviceMemoryResource.__new__(mr.DeviceMemoryResource),
                 Mine()):
        with pytest.raises(RuntimeError):
            base.allocate(10)
        with pytest.raises(RuntimeError):
            base.deallocate(0, 10)
        with pytest.raises(RuntimeError):
            rmm.DeviceBuffer(size=10, mr=base)
    with pytest.raises(TypeError):
        mr.UpstreamResourceAdaptor(host_mr)


def test_system_resource_checks_the_device_before_its_arguments():
    try:
        mr.SystemMemoryResource()
    except RuntimeError:
        unsupported = True  # no driver, or no system-allocated memory on this device
    else:
        unsupported = False
    for call in (lambda: mr.SystemMemoryResource(1), lambda: mr.SystemMemoryResource(x=1)):
        with pytest.raises(RuntimeError if unsupported else TypeError):
            call()


def test_prefetch_to_a_device_that_does_not_exist_is_a_runtime_error(gpu):  # noqa: F811
    for resource in (mr.CudaMemoryResource(), mr.ManagedMemoryResource()):
        buf = rmm.DeviceBuffer(size=1 << 16, mr=resource)
        buf.prefetch(0)
        buf.prefetch(-1)
        with pytest.raises(RuntimeError):
            buf.prefetch(99)


def test_base_class_as_a_device_resource_refuses_allocations_without_crashing():
    old = mr.get_per_device_resource(0)
    base = mr.DeviceMemoryResource()
    try:
        mr.set_per_device_resource(0, base)
        assert mr.get_per_device_resource(0) is base
        with pytest.raises(RuntimeError, match="no resource"):
            base.allocate(10)
    finally:
        mr.set_per_device_resource(0, old)


def test_binning_exponents_out_of_range_are_memory_errors(host_mr):
    with pytest.raises(MemoryError):
        mr.BinningMemoryResource(host_mr, -2, 16)
    with pytest.raises(MemoryError):
        mr.BinningMemoryResource(host_mr, 8, 70)
    # No exponent between them: no bins, as in RMM, whatever their values.
    assert mr.BinningMemoryResource(host_mr, 16, -2).bin_mrs == []
    assert mr.BinningMemoryResource(host_mr, 16, 10).bin_mrs == []


# RMM 26.10's answers to PoolMemoryResource(upstream, size): the pool size, or the exception.
POOL_SIZES = [
    (0, 0),
    (1024, 1024),
    ('1', 'RuntimeError'),
    ('1B', 'RuntimeError'),
    ('1KB', 'RuntimeError'),
    ('1kB', 'RuntimeError'),
    ('1KiB', 1024),
    ('1 MiB', 1048576),
    ('1.5MB', 'RuntimeError'),
    ('2MiB', 2097152),
    ('10 MB', 'RuntimeError'),
    ('1e3', 'ValueError'),
    ('5kb', 'RuntimeError'),
    ('1 kilobyte', 'ValueError'),
    ('abc', 'ValueError'),
    ('', 'ValueError'),
    ('-1', 'ValueError'),
    ('1.5', 'RuntimeError'),
    (-5, 'OverflowError'),
    (3.5, 'TypeError'),
    ('MB', 'ValueError'),
    ('1 M', 'ValueError'),
    ('1MiB ', 'ValueError'),
    (' 1MiB', 'ValueError'),
]


@pytest.mark.parametrize("size, answer", POOL_SIZES)
def test_pool_sizes_parse_and_fail_as_rmms(host_mr, size, answer):
    if isinstance(answer, int):
        assert mr.PoolMemoryResource(host_mr, size).pool_size() == answer
    else:
        with pytest.raises(Exception) as info:
            mr.PoolMemoryResource(host_mr, size)
        assert type(info.value).__name__ == answer


def test_callbacks_see_every_request_as_in_rmm(host_mr):
    log = []

    def alloc(n, s):
        log.append(("alloc", n))
        return host_mr.allocate(n, s)

    def dealloc(p, n, s):
        log.append(("free", n))
        host_mr.deallocate(p, n, s)

    cb = mr.CallbackMemoryResource(alloc, dealloc)
    for n in (0, 1, 1000):
        cb.deallocate(cb.allocate(n), n)
    assert log == [("alloc", 0), ("free", 0), ("alloc", 1), ("free", 1), ("alloc", 1000),
                   ("free", 1000)]


def test_logging_adaptor_logs_zero_byte_requests(host_mr, tmp_path):
    log = mr.LoggingResourceAdaptor(host_mr, log_file_name=str(tmp_path / "zero.csv"))
    for n in (0, 1, 4096):
        log.deallocate(log.allocate(n), n)
    log.flush()
    with open(log.get_file_name()) as f:
        rows = [line.rstrip("\n").split(",") for line in f][1:]
    assert [(r[2], r[4]) for r in rows] == [("allocate", "0"), ("free", "0"), ("allocate", "1"),
                                            ("free", "1"), ("allocate", "4096"), ("free", "4096")]
