"""Memory resources (RMM's ``rmm.pylibrmm.memory_resource``)."""

from rmm.pylibrmm.memory_resource._memory_resource import *  # noqa: F401,F403
from rmm.pylibrmm.memory_resource._memory_resource import __all__ as _all

__all__ = list(_all)
