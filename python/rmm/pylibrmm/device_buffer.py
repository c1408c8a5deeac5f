"""Device memory buffers (RMM's ``rmm.pylibrmm.device_buffer``)."""

from rmm._native import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)

__all__ = [
    "DeviceBuffer",
    "copy_device_to_ptr",
    "copy_host_to_ptr",
    "copy_ptr_to_host",
    "to_device",
]
