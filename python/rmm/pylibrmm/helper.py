"""Helper functions (RMM's ``rmm.pylibrmm.helper``)."""

from rmm._native import parse_bytes

__all__ = ["parse_bytes"]
