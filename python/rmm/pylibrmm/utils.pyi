# Type stubs of rmm.pylibrmm.utils.
from __future__ import annotations

from rmm.pylibrmm.stream import Stream

# RMM's stub declares its C-level stream check (a `cdef` function of the Cython module), which
# Python code cannot import; neither can it here (the stubtest allowlist says so).
def as_stream(stream: Stream) -> Stream: ...
