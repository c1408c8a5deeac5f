"""rmm-rs: the RAPIDS Memory Manager rebuilt in Rust, with RMM 26.10's Python API.

``import rmm`` gives the same names, arguments and defaults as RMM 26.10; the memory resources
underneath are the Rust resources of the ``rmm-rs`` crate.
"""

import os as _os
import warnings

from rmm import _conflicts

# RMM's own rmm-cu13/librmm-cu13 in the same environment: refused or warned about, before
# anything else is imported (see rmm/_conflicts.py).
_conflicts.check(_os.path.dirname(__file__))
del _os, _conflicts

from rmm import mr  # noqa: E402
from rmm._version import __git_commit__, __version__
from rmm.mr import disable_logging, enable_logging, get_log_filenames
from rmm.pylibrmm.device_buffer import DeviceBuffer
from rmm.pylibrmm.logger import (
    flush_logger,
    get_flush_level,
    get_logging_level,
    level_enum,
    set_flush_level,
    set_logging_level,
    should_log,
)
from rmm.rmm import (
    RMMError,
    is_initialized,
    register_reinitialize_hook,
    reinitialize,
    unregister_reinitialize_hook,
)

__all__ = [
    "DeviceBuffer",
    "disable_logging",
    "RMMError",
    "enable_logging",
    "flush_logger",
    "get_flush_level",
    "get_log_filenames",
    "get_logging_level",
    "is_initialized",
    "level_enum",
    "mr",
    "register_reinitialize_hook",
    "reinitialize",
    "set_flush_level",
    "set_logging_level",
    "should_log",
    "unregister_reinitialize_hook",
]
