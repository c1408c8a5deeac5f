"""Device queries (RMM's ``rmm._cuda.gpu``).

``getDevice``, ``setDevice``, ``getDeviceCount``, ``driverGetVersion`` and ``runtimeGetVersion``
go to the CUDA driver through ``rmm._native`` and need nothing else. ``getDeviceAttribute``,
``getDeviceProperties`` and ``deviceGetName`` take and return cuda-python types
(``runtime.cudaDeviceAttr``, ``runtime.cudaDeviceProp``), so, as in RMM, they call
``cuda.bindings`` (the ``cuda-bindings`` package, which RMM depends on); without it they raise
``ImportError`` naming the package.

A failure raises :class:`CUDARuntimeError` (or :class:`CUDADriverError` for ``deviceGetName``),
whose ``status`` is the CUDA error (a ``runtime.cudaError_t`` when cuda-bindings is installed, else
its number: ``cudaErrorNoDevice`` is 100, ``cudaErrorInvalidDevice`` 101) and whose message is
``"<error name>: <error text>"``, as RMM's.
"""

from rmm import _native

try:  # The module-level names RMM's gpu module has, where cuda-bindings is installed.
    from cuda.bindings import driver, runtime
except ImportError:  # pragma: no cover - depends on the environment
    driver = runtime = None


class CUDARuntimeError(RuntimeError):
    """A CUDA runtime call failed; ``status`` is its ``cudaError_t``."""

    # cudaGetErrorName and cudaGetErrorString of the statuses this package raises, for a message
    # without cuda-bindings.
    _TEXT = {
        1: ("cudaErrorInvalidValue", "invalid argument"),
        2: ("cudaErrorMemoryAllocation", "out of memory"),
        3: ("cudaErrorInitializationError", "initialization error"),
        35: (
            "cudaErrorInsufficientDriver",
            "CUDA driver version is insufficient for CUDA runtime version",
        ),
        100: ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
        101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    }

    def __init__(self, status: "runtime.cudaError_t"):
        self.status = status
        name, text = self._TEXT.get(int(status), (f"cudaError {int(status)}", "unknown error"))
        fallback = f"{name}: {text}"
        if runtime is not None:
            fallback = self._error_text(
                runtime.cudaGetErrorName, runtime.cudaGetErrorString, status, fallback
            )
        super().__init__(fallback)

    def __reduce__(self):
        return (type(self), (self.status,))

    @staticmethod
    def _error_text(get_name, get_string, status, fallback):
        """``"<name>: <text>"`` from cuda-bindings' ``cu/cudaGetError{Name,String}``."""
        try:
            _, name = get_name(status)
            _, msg = get_string(status)
            return f"{name.decode()}: {msg.decode()}"
        except Exception:
            return fallback

    @staticmethod
    def _bindings():
        """``(driver, runtime)`` of cuda-bindings, or ImportError naming the package."""
        if runtime is None:
            raise ImportError(
                "this function of rmm._cuda.gpu takes and returns cuda-python types: "
                "install cuda-bindings (pip install 'cuda-bindings>=13,<14')"
            )
        return driver, runtime

    @classmethod
    def _from_native(cls, status, message):
        """The error for a failure of ``rmm._native`` (which knows the message already);
        ``status`` becomes a ``runtime.cudaError_t`` where cuda-bindings is installed."""
        if runtime is not None:
            try:
                status = runtime.cudaError_t(status)
            except ValueError:
                pass
        err = cls.__new__(cls)
        err.status = status
        RuntimeError.__init__(err, message)
        return err


class CUDADriverError(RuntimeError):
    """A CUDA driver call failed; ``status`` is its ``CUresult``."""

    def __init__(self, status: "driver.CUresult") -> None:
        self.status = status
        fallback = f"CUresult {int(status)}"
        if driver is not None:
            fallback = CUDARuntimeError._error_text(
                driver.cuGetErrorName, driver.cuGetErrorString, status, fallback)
        super().__init__(fallback)

    def __reduce__(self):
        return (type(self), (self.status,))


def driverGetVersion() -> int:
    """The latest CUDA version the driver supports, as ``1000 * major + 10 * minor``."""
    return _native._driver_get_version()


def getDevice() -> int:
    """The current CUDA device."""
    return _native._get_device()


def setDevice(device: int) -> None:
    """Makes ``device`` the current CUDA device of this thread."""
    _native._set_device(device)


def runtimeGetVersion() -> int:
    """The CUDA version in use, as ``1000 * major + 10 * minor``.

    rmm-rs calls the driver directly (there is no separate runtime library), so this is the
    driver's version."""
    return _native._driver_get_version()


def getDeviceCount() -> int:
    """The number of CUDA devices."""
    return _native._get_device_count()


def getDeviceAttribute(attr: "runtime.cudaDeviceAttr", device: int) -> int:
    """The value of the device attribute ``attr`` (a ``runtime.cudaDeviceAttr``) of ``device``
    (``cudaDeviceGetAttribute``); CUDARuntimeError on failure."""
    _, rt = CUDARuntimeError._bindings()
    status, value = rt.cudaDeviceGetAttribute(attr, device)
    if status != rt.cudaError_t.cudaSuccess:
        raise CUDARuntimeError(status)
    return value


def getDeviceProperties(device: int) -> "runtime.cudaDeviceProp":
    """The ``runtime.cudaDeviceProp`` of ``device`` (``cudaGetDeviceProperties``);
    CUDARuntimeError on failure."""
    _, rt = CUDARuntimeError._bindings()
    status, prop = rt.cudaGetDeviceProperties(device)
    if status != rt.cudaError_t.cudaSuccess:
        raise CUDARuntimeError(status)
    return prop


def deviceGetName(device: int) -> str:
    """The name of ``device`` (``cuDeviceGetName``); CUDADriverError on failure."""
    drv, _ = CUDARuntimeError._bindings()
    status, device_name = drv.cuDeviceGetName(256, drv.CUdevice(device))
    if status != drv.CUresult.CUDA_SUCCESS:
        raise CUDADriverError(status)
    return device_name.decode()

