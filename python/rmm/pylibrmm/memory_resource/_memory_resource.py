"""The memory resource classes and the per-device current resource.

The classes are implemented in Rust (``rmm._native``); this module gives them RMM 26.10's module
path and adds the functions that are naturally Python: ``_initialize`` (behind
``rmm.reinitialize``) and the logging switches.
"""

import os
import warnings
from collections import defaultdict  # noqa: F401 (a name RMM's module has)

from rmm._cuda.gpu import CUDARuntimeError, driver, getDevice, runtime, setDevice  # noqa: F401
from rmm import _native
from rmm._native import (
    ArenaMemoryResource,
    BinningMemoryResource,
    CallbackMemoryResource,
    CudaAsyncMemoryResource,
    CudaAsyncViewMemoryResource,
    CudaMemoryResource,
    DeviceMemoryResource,
    FailureCallbackResourceAdaptor,
    FixedSizeMemoryResource,
    HistoryResourceAdaptor,
    LimitingResourceAdaptor,
    LoggingResourceAdaptor,
    ManagedMemoryResource,
    PinnedHostMemoryResource,
    PoolMemoryResource,
    PrefetchResourceAdaptor,
    SamHeadroomMemoryResource,
    StatisticsResourceAdaptor,
    SystemMemoryResource,
    TrackingResourceAdaptor,
    UpstreamResourceAdaptor,
    VirtualPoolMemoryResource,
    available_device_memory,
    get_current_device_resource,
    get_per_device_resource,
    set_current_device_resource,
    set_per_device_resource,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM  # noqa: F401 (the default of every stream=)
from rmm.statistics import Statistics  # noqa: F401 (what allocation_counts returns)


def _append_id(filename, id):
    """``filename`` with ``.dev<id>`` put before its extension: ``_append_id("a.txt", 1)`` is
    ``"a.dev1.txt"``."""
    name, ext = os.path.splitext(filename)
    return f"{name}.dev{id}{ext}"


def _initialize(
    pool_allocator=False,
    managed_memory=False,
    initial_pool_size=None,
    maximum_pool_size=None,
    devices=0,
    logging=False,
    log_file_name=None,
    *,
    virtual_pool_allocator=False,
):
    """Replaces every device's resource with one built from these options (what
    ``rmm.reinitialize`` does after running its hooks)."""
    # Imported here: the module keeps exactly RMM's module-level names.
    from rmm.pylibrmm.memory_resource._options import refuse_conflicting_allocators

    refuse_conflicting_allocators(pool_allocator, managed_memory, virtual_pool_allocator)
    upstream = ManagedMemoryResource if managed_memory else CudaMemoryResource
    if virtual_pool_allocator:
        initial = None if initial_pool_size is None else _native.parse_bytes(initial_pool_size)
        maximum = None if maximum_pool_size is None else _native.parse_bytes(maximum_pool_size)

        def make():
            return VirtualPoolMemoryResource(maximum_pool_size=maximum, initial_pool_size=initial)

    elif pool_allocator:
        initial = None if initial_pool_size is None else _native.parse_bytes(initial_pool_size)
        maximum = None if maximum_pool_size is None else _native.parse_bytes(maximum_pool_size)

        def make():
            return PoolMemoryResource(upstream(), initial_pool_size=initial, maximum_pool_size=maximum)

    else:
        make = upstream

    try:
        original_device = getDevice()
    except CUDARuntimeError as e:
        if e.status == 100:  # cudaErrorNoDevice: RMM warns instead of failing
            warnings.warn(str(e))
            return
        raise

    _native._clear_per_device_resources()
    if devices is None:
        devices = [0]
    elif isinstance(devices, int):
        devices = [devices]
    try:
        for device in devices:
            setDevice(device)
            mr = make()
            if logging:
                mr = LoggingResourceAdaptor(mr, log_file_name)
            set_per_device_resource(device, mr)
    finally:
        setDevice(original_device)


def is_initialized():
    """True when every device's resource is usable (RMM's check; always so once set)."""
    return all(isinstance(mr, DeviceMemoryResource) for _, mr in _native._per_device_resources())


def _flush_logs():
    """Flushes the log of every device whose resource is a ``LoggingResourceAdaptor``."""
    for _, mr in _native._per_device_resources():
        if isinstance(mr, LoggingResourceAdaptor):
            mr.flush()


def enable_logging(log_file_name=None):
    """Wraps each device's resource (device 0 when none was set) in a ``LoggingResourceAdaptor``.

    ``log_file_name`` defaults to the ``RMM_LOG_FILE`` environment variable (``ValueError`` when
    neither is given). As in RMM, every adaptor is made on the current device, so each file name
    gets the current device's ``.dev<id>`` before its extension (two devices share one file); see
    ``get_log_filenames``."""
    devices = [d for d, _ in _native._per_device_resources()] or [0]
    for device in devices:
        each_mr = get_per_device_resource(device)
        if not isinstance(each_mr, LoggingResourceAdaptor):
            set_per_device_resource(device, LoggingResourceAdaptor(each_mr, log_file_name))


def disable_logging():
    """Puts back the resource under each device's ``LoggingResourceAdaptor``."""
    for device, each_mr in _native._per_device_resources():
        if isinstance(each_mr, LoggingResourceAdaptor):
            set_per_device_resource(device, each_mr.get_upstream())


def get_log_filenames():
    """The log file of each device in use, ``None`` for a device that is not logging."""
    return {
        device: each_mr.get_file_name() if isinstance(each_mr, LoggingResourceAdaptor) else None
        for device, each_mr in _native._per_device_resources()
    }


# As in RMM, importing the resources imports rmm.statistics (the type their counters come back
# as), so `import rmm` makes `rmm.statistics` available.
__import__("rmm.statistics")  # binds no name here, as in RMM's module
