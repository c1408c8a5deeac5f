"""Calls the Python resources refuse where RMM 26.10 crashes, hands out invalid memory or corrupts
its counters: each is a row of docs/differences.md, which names these tests."""

import pytest

from rmm import mr


def test_binning_add_bin_of_size_zero_is_a_value_error_and_keeps_the_bins(host_mr):
    binning = mr.BinningMemoryResource(host_mr)
    binning.add_bin(1024)
    before = binning.bin_mrs
    with pytest.raises(ValueError):
        binning.add_bin(0)
    assert len(binning.bin_mrs) == len(before)


def test_fixed_size_block_size_zero_is_a_value_error(host_mr):
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(host_mr, block_size=0)


def test_fixed_size_without_blocks_to_preallocate_is_a_value_error(host_mr):
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(host_mr, block_size=4096, blocks_to_preallocate=0)


def test_a_free_of_the_wrong_size_is_a_runtime_error_and_moves_no_counter(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    p = stats.allocate(1000)
    with pytest.raises(RuntimeError):
        stats.deallocate(p, 500)
    counts = stats.allocation_counts
    assert (counts.current_bytes, counts.current_count) == (1000, 1)
    stats.deallocate(p, 1000)
    assert stats.allocation_counts.current_bytes == 0

    limiting = mr.LimitingResourceAdaptor(host_mr, allocation_limit=1 << 20)
    q = limiting.allocate(1000)
    with pytest.raises(RuntimeError):
        limiting.deallocate(q, 500)
    assert limiting.get_allocated_bytes() == 1024
    limiting.deallocate(q, 1000)
    assert limiting.get_allocated_bytes() == 0


def test_limiting_keeps_its_count_on_a_null_or_foreign_free(host_mr):
    limiting = mr.LimitingResourceAdaptor(host_mr, allocation_limit=1 << 20)
    p = limiting.allocate(1000)
    limiting.deallocate(0, 256)
    assert limiting.get_allocated_bytes() == 1024
    # Memory of another resource: the upstream refuses it, and the count stays.
    other = type(host_mr)()
    q = other.allocate(4096)
    with pytest.raises(RuntimeError, match="unknown pointer"):
        limiting.deallocate(q, 4096)
    assert limiting.get_allocated_bytes() == 1024
    other.deallocate(q, 4096)
    limiting.deallocate(p, 1000)
    assert limiting.get_allocated_bytes() == 0


def test_adaptors_do_nothing_for_a_null_free_with_a_size(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    tracking = mr.TrackingResourceAdaptor(stats)
    limiting = mr.LimitingResourceAdaptor(tracking, allocation_limit=1 << 20)
    for adaptor in (limiting, tracking, stats):
        adaptor.deallocate(0, 4096)
    counts = stats.allocation_counts
    assert (counts.current_bytes, counts.current_count, counts.total_count) == (0, 0, 0)
    assert tracking.get_allocated_bytes() == 0
    assert limiting.get_allocated_bytes() == 0


def test_tracking_count_stops_at_zero_on_frees_it_never_tracked(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr)
    p = tracking.allocate(256)
    untracked = host_mr.allocate(4096)
    tracking.deallocate(untracked, 4096)  # forwarded to the upstream, as in RMM
    assert tracking.get_allocated_bytes() == 0
    tracking.deallocate(p, 256)
    assert tracking.get_allocated_bytes() == 0


def test_cuda_resource_double_free_is_a_runtime_error(gpu):
    cuda = mr.CudaMemoryResource()
    p = cuda.allocate(1024)
    cuda.deallocate(p, 1024)
    with pytest.raises(RuntimeError):
        cuda.deallocate(p, 1024)


def test_a_pool_chunk_cannot_be_freed_through_the_upstream_it_came_from(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20, maximum_pool_size=1 << 20)
    p = pool.allocate(1 << 20)  # the whole chunk, at the chunk's own address
    with pytest.raises(RuntimeError, match="claimed block"):
        host_mr.deallocate(p, 1 << 20)
    pool.deallocate(p, 1 << 20)
    assert pool.allocate(1 << 20) == p  # the pool still owns its chunk
