"""Device queries (RMM's ``rmm._cuda.gpu``), over the Rust core's driver calls.

No cuda-python is needed: the values come from the CUDA driver through ``rmm._native``. A
failure raises :class:`CUDARuntimeError` whose ``status`` is the CUDA runtime's error number
(``cudaErrorNoDevice`` is 100, ``cudaErrorInvalidDevice`` 101), so ``e.status ==
runtime.cudaError_t.cudaErrorNoDevice`` works as with RMM.
"""

from rmm import _native


class CUDARuntimeError(RuntimeError):
    """A CUDA call failed; ``status`` is the runtime's error number."""

    def __init__(self, status, msg=None):
        self.status = status
        super().__init__(msg if msg is not None else f"CUDA error {int(status)}")

    def __reduce__(self):
        return (type(self), (self.status, str(self)))


class CUDADriverError(RuntimeError):
    """A CUDA driver call failed; ``status`` is the driver's ``CUresult``."""

    def __init__(self, status, msg=None):
        self.status = status
        super().__init__(msg if msg is not None else f"CUDA driver error {int(status)}")

    def __reduce__(self):
        return (type(self), (self.status, str(self)))


def driverGetVersion() -> int:
    """The latest CUDA version the driver supports, as ``1000 * major + 10 * minor``."""
    return _native._driver_get_version()


def runtimeGetVersion() -> int:
    """The CUDA version in use, as ``1000 * major + 10 * minor``.

    rmm-rs calls the driver directly (there is no separate runtime library), so this is the
    driver's version."""
    return _native._driver_get_version()


def getDevice() -> int:
    """The current CUDA device."""
    return _native._get_device()


def setDevice(device: int) -> None:
    """Makes ``device`` the current CUDA device of this thread."""
    _native._set_device(device)


def getDeviceCount() -> int:
    """The number of CUDA devices."""
    return _native._get_device_count()


__all__ = [
    "CUDADriverError",
    "CUDARuntimeError",
    "driverGetVersion",
    "getDevice",
    "getDeviceCount",
    "runtimeGetVersion",
    "setDevice",
]
