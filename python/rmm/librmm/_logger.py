"""The log levels of RMM's logger (RMM's ``rmm.librmm._logger``)."""

from enum import IntEnum


class level_enum(IntEnum):
    """rapids-logger's ``level_enum``: a logger drops messages below its level."""

    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6
    n_levels = 7


del IntEnum  # RMM's module has no name but level_enum
