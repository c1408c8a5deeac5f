"""Arena, fixed-size and binning resources over host memory (no GPU needed)."""

import inspect

import pytest

import rmm.mr as mr


def test_defaults_and_keywords():
    fixed = inspect.signature(mr.FixedSizeMemoryResource)
    assert fixed.parameters["block_size"].default == 1 << 20
    assert fixed.parameters["blocks_to_preallocate"].default == 128
    binning = inspect.signature(mr.BinningMemoryResource)
    assert binning.parameters["min_size_exponent"].default == -1
    assert binning.parameters["max_size_exponent"].default == -1
    arena = inspect.signature(mr.ArenaMemoryResource)
    assert arena.parameters["arena_size"].default is None
    assert arena.parameters["dump_log_on_failure"].default is False


def test_arena_over_host(host_mr):
    arena = mr.ArenaMemoryResource(upstream_mr=host_mr, arena_size="4MiB", dump_log_on_failure=False)
    assert arena.upstream_mr is host_mr and arena.get_upstream() is host_mr
    assert isinstance(arena, mr.UpstreamResourceAdaptor)
    ptrs = [arena.allocate(1000) for _ in range(50)]
    assert len(set(ptrs)) == 50
    for p in ptrs:
        arena.deallocate(p, 1000)
    with pytest.raises(MemoryError):
        arena.allocate(64 << 20)


def test_fixed_size_over_host(host_mr):
    fixed = mr.FixedSizeMemoryResource(host_mr, block_size=4096, blocks_to_preallocate=4)
    assert fixed.upstream_mr is host_mr
    ptrs = [fixed.allocate(4096) for _ in range(10)]  # grows past the first chunk
    assert len(set(ptrs)) == 10
    for p in ptrs:
        fixed.deallocate(p, 4096)
    with pytest.raises(MemoryError):
        fixed.allocate(8192)  # larger than a block


def test_fixed_size_rejects_negative_sizes(host_mr):
    with pytest.raises(OverflowError):
        mr.FixedSizeMemoryResource(host_mr, block_size=-1)


def test_binning_with_exponents(host_mr):
    binning = mr.BinningMemoryResource(host_mr, 10, 12)
    assert binning._bin_sizes() == [1024, 2048, 4096]
    assert binning.bin_mrs == []
    for size in (100, 1500, 4000, 100_000):
        p = binning.allocate(size)
        binning.deallocate(p, size)


def test_binning_add_bin_keeps_bin_resources(host_mr):
    binning = mr.BinningMemoryResource(host_mr)
    assert binning._bin_sizes() == []
    bin_mr = mr.FixedSizeMemoryResource(host_mr, block_size=1 << 16, blocks_to_preallocate=2)
    stats = mr.StatisticsResourceAdaptor(bin_mr)
    binning.add_bin(1 << 16, stats)
    binning.add_bin(1024)
    binning.add_bin(allocation_size=2048, bin_resource=None)
    assert binning._bin_sizes() == [1024, 2048, 1 << 16]
    assert binning.bin_mrs == [stats] and binning.bin_mrs[0] is stats
    p = binning.allocate(30_000)  # lands in the 64 KiB bin
    assert stats.allocation_counts.current_bytes == 30_000
    binning.deallocate(p, 30_000)
    assert stats.allocation_counts.current_bytes == 0


def test_binning_errors(host_mr):
    with pytest.raises(TypeError):
        mr.BinningMemoryResource(host_mr).add_bin(1024, object())
    with pytest.raises(OverflowError):
        mr.BinningMemoryResource(host_mr, 1, 200)  # int8_t, as RMM
    with pytest.raises(MemoryError):  # RMM's bin of 2^63 bytes cannot be allocated
        mr.BinningMemoryResource(host_mr, 10, 63)
