"""CUDA streams (RMM's ``rmm.pylibrmm.stream``)."""

from enum import IntEnum

from rmm._native import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Stream,
    _OwningStream,
)


class CudaStreamFlags(IntEnum):
    """Stream creation flags: ``SYNC_DEFAULT`` streams synchronise with the legacy default
    stream, ``NON_BLOCKING`` ones do not."""

    SYNC_DEFAULT = 0
    NON_BLOCKING = 1
