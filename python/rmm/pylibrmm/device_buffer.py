"""Device memory buffers (RMM's ``rmm.pylibrmm.device_buffer``)."""

import numpy as np

from rmm._native import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM
