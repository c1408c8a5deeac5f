"""The memory resource classes and the per-device current resource.

The classes are implemented in Rust (``rmm._native``); this module gives them RMM 26.10's module
path and adds the functions that are naturally Python.
"""

from rmm._native import (
    CudaMemoryResource,
    DeviceMemoryResource,
    PoolMemoryResource,
    StatisticsResourceAdaptor,
    UpstreamResourceAdaptor,
    available_device_memory,
    get_current_device_resource,
    get_per_device_resource,
    set_current_device_resource,
    set_per_device_resource,
)

__all__ = [
    "CudaMemoryResource",
    "DeviceMemoryResource",
    "PoolMemoryResource",
    "StatisticsResourceAdaptor",
    "UpstreamResourceAdaptor",
    "available_device_memory",
    "get_current_device_resource",
    "get_per_device_resource",
    "set_current_device_resource",
    "set_per_device_resource",
]

# As in RMM, importing the resources imports rmm.statistics (the type their counters come back
# as), so `import rmm` makes `rmm.statistics` available.
import rmm.statistics  # noqa: E402,F401
