"""The PyTorch allocate hook reports failure as a C++ ``std::bad_alloc`` (PyTorch does not test
its result for null). A small C++ program loads the extension, calls the hook for a device that
does not exist and catches the exception: no GPU needed, only a C++ compiler."""

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import rmm._native as native

PROGRAM = r"""
#include <dlfcn.h>
#include <cstdio>
#include <new>
int main(int, char** argv) {
  if (argv[2][0] != '\0' && !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) { std::puts(dlerror()); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!lib) { std::puts(dlerror()); return 2; }
  auto hook = reinterpret_cast<void* (*)(std::size_t, int, void*)>(dlsym(lib, "rmm_rs_torch_allocate"));
  if (!hook) { std::puts("no rmm_rs_torch_allocate"); return 2; }
  try {
    void* p = hook(256, -1, nullptr);
    std::printf("returned %p\n", p);
    return 1;
  } catch (std::bad_alloc const&) {
    std::puts("bad_alloc");
  }
  return hook(0, -1, nullptr) == nullptr ? 0 : 1;  // an empty request is not a failure
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler (g++)")
def test_failed_allocation_throws_bad_alloc(tmp_path):
    source = tmp_path / "hook.cpp"
    source.write_text(PROGRAM)
    exe = tmp_path / "hook"
    subprocess.run(["g++", "-std=c++17", str(source), "-o", str(exe), "-ldl"], check=True)
    # The extension leaves Python's symbols to the interpreter: load libpython first where there
    # is one (a statically linked interpreter has none, and then the program runs in it anyway).
    libdir, ldlibrary = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    libpython = Path(libdir or "", ldlibrary or "")
    if not (ldlibrary and ldlibrary.endswith(".so") and libpython.exists()):
        pytest.skip("no shared libpython to load the extension outside Python")
    done = subprocess.run([str(exe), native.__file__, str(libpython)], capture_output=True, text=True)
    assert done.stdout.strip() == "bad_alloc", done.stdout + done.stderr
    assert done.returncode == 0
