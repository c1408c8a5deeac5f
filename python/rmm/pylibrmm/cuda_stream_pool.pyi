# Type stubs of rmm.pylibrmm.cuda_stream_pool (the class is in the extension rmm._native).
from __future__ import annotations

from typing import Optional

from typing_extensions import Self, final

from rmm.pylibrmm.stream import CudaStreamFlags, Stream

@final
class CudaStreamPool:
    def __new__(
        cls, pool_size: int | None = None, flags: CudaStreamFlags | int = ...
    ) -> Self: ...
    def get_stream(self, stream_id: int | None = None) -> Stream: ...
    def get_pool_size(self) -> int: ...
