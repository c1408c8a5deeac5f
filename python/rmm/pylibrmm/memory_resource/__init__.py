"""Memory resources (RMM's ``rmm.pylibrmm.memory_resource``)."""

from rmm.pylibrmm.memory_resource._memory_resource import *  # noqa: F401,F403
from rmm.pylibrmm.memory_resource._memory_resource import __all__ as _all
from rmm.pylibrmm.memory_resource import experimental

__all__ = [*_all, "experimental"]
