# Type stubs of rmm.pylibrmm.memory_resource.experimental (the class is in the extension
# rmm._native).
from __future__ import annotations

from typing_extensions import Self, disjoint_base

from rmm.pylibrmm.memory_resource._memory_resource import DeviceMemoryResource

@disjoint_base
class CudaAsyncManagedMemoryResource(DeviceMemoryResource):
    def __new__(cls) -> Self: ...
    def pool_handle(self) -> int: ...
