"""Basic shape of the package: module paths, class hierarchy, sizes, errors."""

import pytest

import rmm
from rmm._native import parse_bytes
from rmm.pylibrmm.memory_resource import (
    CudaMemoryResource,
    DeviceMemoryResource,
    PoolMemoryResource,
    StatisticsResourceAdaptor,
    UpstreamResourceAdaptor,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream


def test_version_is_rmm_26_10():
    assert rmm.__version__.startswith("26.10")


@pytest.mark.parametrize(
    "text,expected",
    [("100", 100), ("1GiB", 1 << 30), ("1 GB", 10**9), ("1.5 KiB", 1536), (7, 7)],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("bad", ["", "GiB", "-1", "1 GiBs", "1.2.3"])
def test_parse_bytes_rejects(bad):
    with pytest.raises(ValueError):
        parse_bytes(bad)


def test_class_hierarchy_and_module_paths():
    assert issubclass(PoolMemoryResource, UpstreamResourceAdaptor)
    assert issubclass(UpstreamResourceAdaptor, DeviceMemoryResource)
    assert issubclass(CudaMemoryResource, DeviceMemoryResource)
    assert CudaMemoryResource.__module__ == "rmm.pylibrmm.memory_resource._memory_resource"


def test_upstream_must_not_be_none():
    # RMM raises a plain Exception here (its Cython constructors let None through to a check).
    with pytest.raises(Exception, match="^Argument `upstream_mr` must not be None$") as info:
        StatisticsResourceAdaptor(None)
    assert type(info.value) is Exception


def test_pool_over_host_counts(host_mr):
    pool = PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="4MiB")
    stats = StatisticsResourceAdaptor(pool)
    assert stats.upstream_mr is pool and pool.upstream_mr is host_mr
    assert pool.pool_size() == 1 << 20
    ptrs = [stats.allocate(1000) for _ in range(10)]
    counts = stats.allocation_counts
    assert counts.current_count == 10 and counts.current_bytes == 10_000
    for p in ptrs:
        stats.deallocate(p, 1000)
    assert stats.allocation_counts.current_bytes == 0
    assert stats.allocation_counts.peak_bytes == 10_000
    with pytest.raises(MemoryError):
        stats.allocate(8 << 20)  # over the pool's maximum
    assert stats.allocation_counts.current_count == 0


def test_default_stream():
    assert DEFAULT_STREAM.is_default()
    assert Stream(DEFAULT_STREAM) == DEFAULT_STREAM
    with pytest.raises(ValueError):
        Stream(DEFAULT_STREAM, flags=0)
