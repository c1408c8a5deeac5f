"""The version of RMM whose API this package provides (code checking ``rmm.__version__`` for a
RAPIDS release sees that release)."""

import importlib.resources  # noqa: F401 (RMM reads its version files with it)

__version__ = "26.10.00"
__git_commit__ = ""

__all__ = ["__git_commit__", "__version__"]
