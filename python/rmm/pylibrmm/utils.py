"""Utility functions (RMM's ``rmm.pylibrmm.utils``).

RMM's module holds only C-level helpers, so it has no Python names; neither has this one. The
stub declares ``as_stream``, as RMM's does, for type checkers only.
"""
