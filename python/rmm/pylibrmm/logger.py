"""RMM's debug logger (RMM's ``rmm.pylibrmm.logger``).

There is one logger per process, shared by the Rust core, the C++ face and Python: its file is
named by ``RMM_DEBUG_LOG_FILE`` (standard error otherwise), its level defaults to ``info`` and its
flush level to ``off``.
"""

import warnings

from rmm import _native
from rmm.librmm._logger import level_enum


def _validate_level_type(level):
    if not isinstance(level, level_enum):
        raise TypeError("level must be an instance of the level_enum enum")


def should_log(level):
    """True if a message at ``level`` would be logged (``level`` at or above the current level).

    Raises ``TypeError`` if ``level`` is not a ``level_enum``."""
    _validate_level_type(level)
    return int(level) >= _native._logger_level()


def set_logging_level(level):
    """Sets the logging level: messages below it are dropped.

    Raises ``TypeError`` if ``level`` is not a ``level_enum``."""
    _validate_level_type(level)
    _native._logger_set_level(int(level))
    if not should_log(level):
        warnings.warn(
            f"RMM will not log level_enum.{level.name}. This may be because the C++ library is "
            "compiled for a less-verbose logging level."
        )


def get_logging_level():
    """The current logging level, a ``level_enum``."""
    return level_enum(_native._logger_level())


def flush_logger():
    """Writes buffered log messages to the log file."""
    _native._logger_flush()


def set_flush_level(level):
    """Messages at ``level`` or above are flushed to the file as they are written.

    Raises ``TypeError`` if ``level`` is not a ``level_enum``."""
    _validate_level_type(level)
    _native._logger_flush_on(int(level))
    if not should_log(level):
        warnings.warn(
            f"RMM will not log level_enum.{level.name}. This may be because the C++ library is "
            "compiled for a less-verbose logging level."
        )


def get_flush_level():
    """The current flush level, a ``level_enum``."""
    return level_enum(_native._logger_flush_level())
