# Type stubs of rmm.pylibrmm.stream (the classes are in the extension rmm._native).
from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional

from typing_extensions import Self, disjoint_base, final

class CudaStreamFlags(IntEnum):
    SYNC_DEFAULT = 0
    NON_BLOCKING = 1

@final
class _OwningStream:
    def __new__(cls, flags: CudaStreamFlags | int = ...) -> Self: ...

@disjoint_base
class Stream:
    def __new__(cls, obj: Any | None = None, flags: CudaStreamFlags | int | None = None) -> Self: ...
    def __cuda_stream__(self) -> tuple[int, int]: ...
    def synchronize(self) -> None: ...
    def is_default(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

DEFAULT_STREAM: Stream
LEGACY_DEFAULT_STREAM: Stream
PER_THREAD_DEFAULT_STREAM: Stream
