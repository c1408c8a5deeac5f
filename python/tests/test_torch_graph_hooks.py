"""The CUDA graph hooks of the PyTorch allocator take C++ arguments (a ``std::pair`` pool id and a
``std::function`` stream filter): a small C++ library calls them as PyTorch's pluggable allocator
does (through ``std::function``s made from the integer addresses PyTorch's setters take) and the
extension's record of graph pools shows what arrived. No GPU needed, only a C++ compiler."""

import ctypes
import shutil
import subprocess

import pytest

import rmm._native as native

LIBRARY = r"""
#include <cstdint>
#include <functional>
#include <utility>
struct CUstream_st;
using cudaStream_t = CUstream_st*;
using MempoolId_t = std::pair<unsigned long long, unsigned long long>;
using BeginFn = void(int, MempoolId_t, std::function<bool(cudaStream_t)>);
using PoolFn = void(int, MempoolId_t);
static int filter_copies_alive = 0;
struct Counted {
  Counted() { ++filter_copies_alive; }
  Counted(Counted const&) { ++filter_copies_alive; }
  ~Counted() { --filter_copies_alive; }
};
extern "C" void begin(std::uintptr_t fn, int device, unsigned long long a, unsigned long long b) {
  std::function<BeginFn> f = reinterpret_cast<BeginFn*>(fn);
  Counted c;
  f(device, {a, b}, [c](cudaStream_t) { return false; });
}
extern "C" void end(std::uintptr_t fn, int device, unsigned long long a, unsigned long long b) {
  std::function<PoolFn> f = reinterpret_cast<PoolFn*>(fn);
  f(device, {a, b});
}
extern "C" int filters_alive() { return filter_copies_alive; }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler (g++)")
def test_the_hooks_receive_torch_s_arguments(tmp_path):
    source = tmp_path / "drive.cpp"
    source.write_text(LIBRARY)
    lib_path = tmp_path / "libdrive.so"
    subprocess.run(["g++", "-std=c++17", "-shared", "-fPIC", str(source), "-o", str(lib_path)], check=True)
    lib = ctypes.CDLL(str(lib_path))
    args = [ctypes.c_size_t, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong]
    lib.begin.argtypes = args
    lib.end.argtypes = args
    begin, end, release = native._torch_graph_hooks()

    lib.begin(begin, 3, 11, 0)
    lib.begin(begin, 3, 0, 12)  # a pool from graph_pool_handle()
    active, pools = native._torch_graph_pools()
    assert active == 2
    assert ((3, 11, 0), 1) in pools and ((3, 0, 12), 1) in pools
    assert lib.filters_alive() == 2, "the hook keeps each filter until the end"

    lib.end(end, 3, 11, 0)
    assert native._torch_graph_pools()[0] == 1
    assert lib.filters_alive() == 1, "the end drops the capture's filter"
    lib.end(end, 3, 0, 12)
    assert native._torch_graph_pools()[0] == 0
    assert lib.filters_alive() == 0

    lib.end(release, 3, 11, 0)
    lib.end(release, 3, 0, 12)
    assert all(key[0] != 3 for key, _ in native._torch_graph_pools()[1])
    assert native._torch_release_graph_memory() == 0
