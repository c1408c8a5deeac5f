"""Finds RMM's own distributions installed beside this package, at ``import rmm``.

RMM's ``rmm-cu13`` (or ``rmm-cu12``) installs the same import package, ``rmm``, as this
distribution (``rmm-rs``). pip does not detect two distributions writing one folder: installed into
the same ``site-packages``, the later install overwrites the earlier one's files and leaves the
rest, and RMM's compiled modules (``device_buffer.abi3.so`` and others) are then found before our
``.py`` modules of the same names. Such a folder is neither package, so importing it is refused
with an ``ImportError`` that says how to repair it. Where RMM's distribution lives in another
directory of ``sys.path``, the one found first is used (here, ours); that is reported with a
warning, as is ``librmm-cu13``/``librmm-cu12`` (RMM's C++ library: libraries linked to it, such as
cuDF, allocate through RMM's resources, not through ours).
"""

import importlib.metadata
import os
import warnings

# RMM's Python package, and its C++ library as a wheel.
PYTHON_DISTRIBUTIONS = ("rmm-cu13", "rmm-cu12")
LIBRARY_DISTRIBUTIONS = ("librmm-cu13", "librmm-cu12")
# This package's distributions: the wheels per CUDA major, and the build from the repository.
OUR_DISTRIBUTIONS = ("rmm-rs-cu13", "rmm-rs-cu12", "rmm-rs")


class RMMDistributionWarning(UserWarning):
    """RMM's own distribution is installed in the same environment as rmm-rs."""


def _find(name):
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _shares_our_folder(dist, package_dir):
    """Whether ``dist`` installed files into the folder this package was imported from."""
    ours = os.path.realpath(package_dir)
    for file in dist.files or ():
        parts = file.parts
        if len(parts) >= 2 and parts[0] == "rmm":
            located = os.path.realpath(os.path.dirname(dist.locate_file(file)))
            if located == ours or located.startswith(ours + os.sep):
                return True
    return False


def _ours():
    """The name of the distribution of this package that is installed (rmm-rs when none is)."""
    return next((name for name in OUR_DISTRIBUTIONS if _find(name) is not None), OUR_DISTRIBUTIONS[-1])


def check(package_dir):
    """Raises ImportError or warns (see the module's text) for RMM's distributions."""
    ours = None
    for name in PYTHON_DISTRIBUTIONS:
        dist = _find(name)
        if dist is None:
            continue
        version = dist.version
        ours = ours or _ours()
        if _shares_our_folder(dist, package_dir):
            raise ImportError(
                f"{name} {version} (RMM's own Python package) and {ours} are both installed in "
                f"{os.path.dirname(os.path.realpath(package_dir))}: both provide the package "
                f"'rmm', so that folder now mixes files of the two and is neither. Keep one: "
                f"'pip uninstall -y {name} {ours}', then install again the one you want: "
                f"rmm-rs (its wheel, or 'pip install <clone>/python') or 'pip install {name}'."
            )
        warnings.warn(
            f"{name} {version} (RMM's own Python package) is also installed, in another "
            f"directory of sys.path; 'import rmm' gives {ours} (found first). Uninstall one of "
            f"them ('pip uninstall {name}') to make the choice explicit.",
            RMMDistributionWarning,
            stacklevel=3,
        )
    for name in LIBRARY_DISTRIBUTIONS:
        dist = _find(name)
        if dist is not None:
            ours = ours or _ours()
            warnings.warn(
                f"{name} {dist.version} (RMM's C++ library) is installed beside {ours}. Libraries "
                f"linked to it (cuDF, for one) allocate through RMM's own resources, not through "
                f"rmm.mr's current resource, and cannot use {ours} yet.",
                RMMDistributionWarning,
                stacklevel=3,
            )
