"""rmm-rs: the RAPIDS Memory Manager rebuilt in Rust, with RMM 26.10's Python API.

``import rmm`` gives the same names, arguments and defaults as RMM 26.10; the memory resources
underneath are the Rust resources of the ``rmm-rs`` crate.
"""

from rmm._version import __git_commit__, __version__
from rmm.pylibrmm.device_buffer import DeviceBuffer

__all__ = [
    "DeviceBuffer",
]
