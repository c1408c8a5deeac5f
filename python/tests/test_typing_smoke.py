"""The package's type information: the stubs and ``py.typed`` are installed beside the modules, and
the typing smoke script (``typing/smoke.py``, which ``make python-typecheck`` checks with
``mypy --strict``) runs on a GPU, so the code the type checker accepts is code that works."""

import os
import runpy

import rmm
import rmm._native as native

# The modules whose names come from the extension, each with its stub (RMM 26.10 ships stubs for
# the same pylibrmm modules).
STUBBED = (
    "rmm/_native",
    "rmm/allocators/torch",
    "rmm/pylibrmm/cuda_stream_pool",
    "rmm/pylibrmm/device_buffer",
    "rmm/pylibrmm/helper",
    "rmm/pylibrmm/logger",
    "rmm/pylibrmm/memory_resource/_memory_resource",
    "rmm/pylibrmm/memory_resource/experimental",
    "rmm/pylibrmm/stream",
)


def test_stubs_and_py_typed_are_installed():
    root = os.path.dirname(os.path.dirname(rmm.__file__))
    assert os.path.isfile(os.path.join(root, "rmm", "py.typed"))
    missing = [m for m in STUBBED if not os.path.isfile(os.path.join(root, m + ".pyi"))]
    assert missing == []


def test_smoke_script_runs(gpu):
    before = native.get_per_device_resource(0)
    level = rmm.get_logging_level()
    try:
        runpy.run_path(os.path.join(os.path.dirname(__file__), "typing", "smoke.py"), run_name="__main__")
    finally:
        rmm.set_logging_level(level)
        native.set_per_device_resource(0, before)
