# Type stubs of rmm.pylibrmm.helper.
from __future__ import annotations

import re

pattern: re.Pattern[str]

# RMM's stub declares its C-level parser (a `cdef` function of the Cython module), which Python
# code cannot import; neither can it here (the stubtest allowlist says so).
def parse_bytes(s: int | str) -> int: ...
