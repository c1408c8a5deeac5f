"""Helper functions (RMM's ``rmm.pylibrmm.helper``).

As in RMM, the byte-size parser behind ``rmm.reinitialize``'s pool sizes is not a Python-level
name here; only the pattern it matches sizes against is. The stub declares ``parse_bytes``, as
RMM's does, for type checkers only.
"""

import re

# RMM's pattern for a byte size: a number, optional spaces, an optional unit.
pattern = re.compile(r"^([0-9]+(?:\.[0-9]*)?)[\t ]*((?i:(?:[kmgtp]i?)?b))?$")
