"""The scenario registry and the recorder that scenarios write their facts to.

A scenario is a plain function taking a recorder ``t``. It records only facts that are the same on
every run of one implementation: return values, attribute values, counters, exception types (and
messages where RMM's message is API). It never records a raw pointer or a timing.

Scenario modules import nothing from ``rmm`` at their top: the runner lists scenarios without
importing the implementation (so that it can report every scenario as skipped where ``rmm`` cannot
be imported or no GPU is present), and each scenario imports what it needs itself.
"""

import dataclasses
import enum
import json

#: Every registered scenario by its full name ("<module>/<name>"), in registration order.
REGISTRY = {}


class Scenario:
    """One registered scenario: its function, full name and the GPUs it needs."""

    def __init__(self, fn, module, name, needs_gpus, isolate):
        self.fn = fn
        self.module = module
        self.name = f"{module}/{name}"
        self.needs_gpus = needs_gpus
        self.isolate = isolate


def _module_short(modname):
    return modname.rsplit(".", 1)[-1]


def scenario(needs_gpus=1, name=None, isolate=False):
    """Register the decorated function as a scenario.

    ``needs_gpus`` is how many GPUs it needs (0: it runs on a machine without one). ``name`` defaults
    to the function's name. ``isolate`` runs it alone in a fresh process (for scenarios that look at
    the state a process starts with, or that change state no reset undoes).
    """

    def deco(fn):
        register(fn, fn.__module__, name or fn.__name__, needs_gpus, isolate)
        return fn

    return deco


def register(fn, module, name, needs_gpus=1, isolate=False):
    """Register ``fn`` as scenario ``<module>/<name>`` (for scenarios generated in loops)."""
    sc = Scenario(fn, _module_short(module), name, needs_gpus, isolate)
    if sc.name in REGISTRY:
        raise ValueError(f"scenario {sc.name} registered twice")
    REGISTRY[sc.name] = sc
    return sc


class Skip(Exception):
    """Raised by ``t.skip``: the scenario cannot run here (a library is missing)."""


def norm(v, depth=0):
    """``v`` as a JSON value that is the same on every run: containers element by element, enums
    by name, dataclasses by their fields, anything else by its type's name (never its address)."""
    if depth > 8:
        return {"type": type(v).__name__}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return v if v == v else "nan"
    if isinstance(v, (list, tuple)):
        return [norm(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {str(norm(k, depth + 1)): norm(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        return {"bytes": b[:256].hex(), "len": len(b)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        d = {"type": type(v).__name__}
        for f in dataclasses.fields(v):
            d[f.name] = norm(getattr(v, f.name), depth + 1)
        return d
    mod = type(v).__module__
    if mod == "numpy" or mod.startswith("numpy."):
        if hasattr(v, "tolist"):
            return {"numpy": str(getattr(v, "dtype", "")), "value": norm(v.tolist(), depth + 1)}
    return {"type": type(v).__name__}


def raised(e, message=False):
    """An exception as a trace value: its type's name, and its message where asked."""
    d = {"raises": type(e).__name__}
    if message:
        d["message"] = str(e)
    return d


class Recorder:
    """What a scenario writes to. ``emit`` receives each ``[label, value]`` as it is recorded, so
    that what a scenario recorded before a crash still reaches the trace."""

    def __init__(self, emit, gpus):
        self._emit = emit
        #: The number of GPUs this run may use.
        self.gpus = gpus

    def rec(self, label, value):
        """Record ``value`` (normalised by ``norm``) under ``label``; returns ``value``."""
        entry = [str(label), norm(value)]
        json.dumps(entry)  # fails here, in the scenario, on a value JSON cannot hold
        self._emit(entry)
        return value

    def call(self, label, fn, *args, msg=False, conv=None, **kwargs):
        """Call ``fn(*args, **kwargs)``; record its return value (``conv(value)`` where given) or
        the exception it raised (with its message where ``msg``). Returns the value, or None."""
        try:
            value = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - recording what raised is the point
            self.rec(label, raised(e, msg))
            return None
        self.rec(label, conv(value) if conv is not None else value)
        return value

    def attr(self, label, obj, name, msg=False, conv=None):
        """Record ``getattr(obj, name)`` (or what it raised)."""
        return self.call(label, getattr, obj, name, msg=msg, conv=conv)

    def skip(self, reason):
        """End the scenario as skipped (both implementations skip alike: the reason is the
        environment, e.g. a library that is not installed)."""
        raise Skip(reason)

    def need_module(self, modname):
        """Import ``modname`` or skip the scenario saying it is missing."""
        import importlib

        try:
            return importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001 - any import failure means "not usable here"
            self.skip(f"{modname} not importable: {type(e).__name__}: {e}")
