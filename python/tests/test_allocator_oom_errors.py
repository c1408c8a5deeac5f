"""Out-of-memory errors each caller's library understands, with the resource's message, and the
memory statistics PyTorch cannot keep for a pluggable allocator (rmm.allocators.torch)."""

import re

import pytest

import rmm._native as native
import rmm.allocators.torch as rt
import rmm.mr
from rmm.pylibrmm.memory_resource import PoolMemoryResource, StatisticsResourceAdaptor

from test_allocators import has, run_script


def test_torch_statistics_from_the_device_resource(host_mr):
    pool = PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    stats = StatisticsResourceAdaptor(pool)
    old = rmm.mr.get_per_device_resource(0)
    rmm.mr.set_per_device_resource(0, stats)
    try:
        a = stats.allocate(1000)
        b = stats.allocate(3000)
        stats.deallocate(b, 3000)
        assert rt.memory_allocated(0) == 1000
        assert rt.max_memory_allocated(0) == 4000
        assert rt.memory_reserved(0) == pool.pool_size() >= 4000
        assert rt.max_memory_reserved(0) == pool.pool_size()
        rt.reset_peak_memory_stats(0)
        assert rt.max_memory_allocated(0) == 1000
        # Pushed counter frames do not change the totals.
        stats.push_counters()
        c = stats.allocate(500)
        assert (rt.memory_allocated(0), rt.max_memory_allocated(0)) == (1500, 1500)
        stats.deallocate(c, 500)
        stats.pop_counters()
        stats.deallocate(a, 1000)
        assert (rt.memory_allocated(0), rt.max_memory_allocated(0)) == (0, 1500)
    finally:
        rmm.mr.set_per_device_resource(0, old)


def test_torch_statistics_without_a_statistics_adaptor_is_value_error(host_mr):
    old = rmm.mr.get_per_device_resource(0)
    rmm.mr.set_per_device_resource(0, PoolMemoryResource(host_mr, initial_pool_size=1 << 20))
    try:
        with pytest.raises(ValueError, match="StatisticsResourceAdaptor"):
            rt.memory_allocated(0)
    finally:
        rmm.mr.set_per_device_resource(0, old)


def test_torch_statistics_without_a_pool_reserve_what_is_allocated(host_mr):
    stats = StatisticsResourceAdaptor(host_mr)
    old = rmm.mr.get_per_device_resource(0)
    rmm.mr.set_per_device_resource(0, stats)
    try:
        p = stats.allocate(256)
        assert rt.memory_reserved(0) == rt.memory_allocated(0) == 256
        stats.deallocate(p, 256)
    finally:
        rmm.mr.set_per_device_resource(0, old)


TORCH_OOM = """
import json, re
import torch
import rmm.mr as mr
import rmm.allocators.torch as rt
from rmm.allocators.torch import rmm_torch_allocator

pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=32 << 20,
                             maximum_pool_size=256 << 20)
stats = mr.StatisticsResourceAdaptor(pool)
resource = {"limit": mr.LimitingResourceAdaptor(stats, allocation_limit=128 << 20),
            "pool": stats}[KIND]
mr.set_current_device_resource(resource)
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
a = torch.ones(1 << 20, device="cuda")          # 4 MiB
out = {"allocated": rt.memory_allocated(), "reserved": rt.memory_reserved()}
try:
    torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    out["error"] = None
except torch.cuda.OutOfMemoryError as e:
    out["error"], out["message"] = "torch.cuda.OutOfMemoryError", str(e)
except Exception as e:
    out["error"], out["message"] = type(e).__name__, str(e)
b = torch.ones(1 << 20, device="cuda") + a      # the process goes on allocating
out["sum"] = b.sum().item()
out["max_allocated"] = rt.max_memory_allocated()
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    "kind, pattern",
    [
        # The limiting adaptor's words: the limit, what is allocated, the request.
        ("limit", r"Exceeded memory limit 134217728; Allocated bytes \d+; Requested bytes 1073741824"),
        # The pool's words and its sizes: pool size, free bytes, largest free block.
        ("pool", r"Maximum pool size exceeded.*; pool size \d+, free \d+, largest free block \d+"),
    ],
)
def test_torch_out_of_memory_is_torch_cuda_out_of_memory_error(gpu, kind, pattern):
    pytest.importorskip("torch")
    result = run_script(TORCH_OOM.replace("[KIND]", f"[{kind!r}]"))
    print("PyTorch raised", result["error"], "with:", result.get("message"))
    assert result["error"] == "torch.cuda.OutOfMemoryError", result
    assert re.search(pattern, result["message"], re.S), result["message"]
    assert result["sum"] == 2.0 * (1 << 20)
    assert result["allocated"] >= 4 << 20 and result["reserved"] >= 32 << 20
    assert result["max_allocated"] >= 8 << 20


def test_cupy_out_of_memory_is_cupy_out_of_memory_error(gpu):
    cupy = pytest.importorskip("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    old = rmm.mr.get_current_device_resource()
    limited = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), allocation_limit=1 << 20)
    rmm.mr.set_current_device_resource(limited)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        with pytest.raises(cupy.cuda.memory.OutOfMemoryError, match="Exceeded memory limit 1048576") as info:
            cupy.empty(4 << 20, dtype=cupy.uint8)
        assert isinstance(info.value.__cause__, MemoryError)
        assert info.value._size == 4 << 20
    finally:
        cupy.cuda.set_allocator(previous)
        rmm.mr.set_current_device_resource(old)


def test_numba_out_of_memory_is_numba_cuda_api_error(gpu):
    # No kernel is compiled: numba's device arrays only need its memory manager (and numba-cuda's
    # compiler is broken by some NumPy versions).
    pytest.importorskip("numba.cuda")
    pytest.importorskip("cuda.bindings.driver")
    result = run_script(
        """
        import json
        import rmm.mr as mr
        mr.set_current_device_resource(
            mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=1 << 20))
        from numba import cuda
        from numba.cuda.cudadrv.driver import CudaAPIError
        from cuda.bindings.driver import CUresult
        from rmm.allocators.numba import RMMNumbaManager
        cuda.set_memory_manager(RMMNumbaManager)
        try:
            cuda.device_array(4 << 20, dtype="u1")
            out = {"error": None}
        except CudaAPIError as e:
            out = {"error": "CudaAPIError", "oom": e.code == CUresult.CUDA_ERROR_OUT_OF_MEMORY,
                   "message": str(e), "cause": type(e.__cause__).__name__}
        print(json.dumps(out))
        """
    )
    assert result["error"] == "CudaAPIError" and result["oom"], result
    assert "Exceeded memory limit 1048576" in result["message"]
    assert result["cause"] == "MemoryError"


@pytest.mark.skipif(not has("torch"), reason="PyTorch is not installed")
def test_torch_hook_throws_torch_error_types_in_a_torch_process(tmp_path):
    """Without a GPU: a C++ program loads PyTorch's c10 libraries and the extension, calls the
    hook for a device that does not exist, and catches c10::Error (a RuntimeError in Python) with
    the message; the out-of-memory type is the GPU test's."""
    import importlib.util
    import shutil
    import subprocess
    from pathlib import Path

    import sysconfig

    if shutil.which("g++") is None:
        pytest.skip("no C++ compiler (g++)")
    torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    lib = torch_dir / "lib"
    source = tmp_path / "hook.cpp"
    source.write_text(
        r'''
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <cstdio>
int main(int, char** argv) {
  for (int i = 1; i <= 2; ++i)
    if (argv[i][0] != '\0' && !dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL)) { std::puts(dlerror()); return 2; }
  void* ext = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
  if (!ext) { std::puts(dlerror()); return 2; }
  auto hook = reinterpret_cast<void* (*)(std::size_t, int, void*)>(dlsym(ext, "rmm_rs_torch_allocate"));
  try { hook(256, -1, nullptr); } catch (const c10::OutOfMemoryError&) { std::puts("oom"); return 1; }
  catch (const c10::Error& e) { std::printf("c10::Error: %s\n", e.what_without_backtrace()); return 0; }
  catch (...) { std::puts("other"); return 1; }
  return 1;
}
'''
    )
    exe = tmp_path / "hook"
    subprocess.run(
        ["g++", "-std=c++17", str(source), f"-I{torch_dir / 'include'}", f"-L{lib}", "-lc10",
         f"-Wl,-rpath,{lib}", "-ldl", "-o", str(exe)],
        check=True,
    )
    libdir, ldlibrary = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    libpython = Path(libdir or "", ldlibrary or "")
    if not (ldlibrary and ldlibrary.endswith(".so") and libpython.exists()):
        pytest.skip("no shared libpython to load the extension outside Python")
    done = subprocess.run([str(exe), str(libpython), str(lib / "libc10.so"), native.__file__],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("c10::Error: "), done.stdout
