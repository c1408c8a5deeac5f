"""Memory resources and the per-device current resource (RMM's ``rmm.mr``)."""

import importlib

from rmm.pylibrmm.memory_resource import *  # noqa: F401,F403  (every resource and function)
from rmm.pylibrmm.memory_resource import __all__ as _resource_names

# The star import binds pylibrmm's `experimental`; rmm.mr has its own submodule of that name.
experimental = importlib.import_module("rmm.mr.experimental")

__all__ = list(_resource_names)
