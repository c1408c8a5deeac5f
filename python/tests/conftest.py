"""Shared fixtures. Tests that need a GPU take the ``gpu`` fixture (or are marked ``needs_gpu``)
and skip with a printed reason on a machine without one."""

import pytest

import rmm._native as native


def _gpu_reason():
    try:
        free, _ = native.available_device_memory()
    except Exception as e:  # no driver, no device
        return f"no CUDA device: {e}"
    return None if free > 0 else "no CUDA device"


GPU_SKIP_REASON = _gpu_reason()


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_gpu: the test needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    if GPU_SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "needs_gpu" in item.keywords or "gpu" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


def pytest_report_header(config):
    return f"GPU: {'available' if GPU_SKIP_REASON is None else GPU_SKIP_REASON}"


@pytest.fixture(scope="session")
def gpu():
    """A CUDA device is present (tests taking this fixture skip otherwise)."""
    return True


@pytest.fixture
def host_mr():
    """A host-memory resource: runs pools and adaptors without a GPU."""
    return native._HostMemoryResource()
