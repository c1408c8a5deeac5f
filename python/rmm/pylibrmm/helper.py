"""Helper functions (RMM's ``rmm.pylibrmm.helper``)."""

import re

from rmm._native import parse_bytes

# RMM's pattern for a byte size: a number, optional spaces, an optional unit.
pattern = re.compile(r"^([0-9]+(?:\.[0-9]*)?)[\t ]*((?i:(?:[kmgtp]i?)?b))?$")

__all__ = ["parse_bytes"]
