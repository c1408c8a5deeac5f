"""Every module of RMM's Python package: its names, its callables' signatures, its classes'
members. These need no GPU: importing ``rmm`` creates no CUDA context."""

import importlib
import inspect
import re

from oracle_lib import register

#: Every module of RMM 26.10's Python package (the allocators' modules need their library).
MODULES = [
    "rmm",
    "rmm.rmm",
    "rmm.mr",
    "rmm.mr.experimental",
    "rmm.statistics",
    "rmm._version",
    "rmm._cuda",
    "rmm._cuda.gpu",
    "rmm.librmm",
    "rmm.librmm._logger",
    "rmm.pylibrmm",
    "rmm.pylibrmm.memory_resource",
    "rmm.pylibrmm.memory_resource.experimental",
    "rmm.pylibrmm.memory_resource._memory_resource",
    "rmm.pylibrmm.device_buffer",
    "rmm.pylibrmm.stream",
    "rmm.pylibrmm.logger",
    "rmm.pylibrmm.helper",
    "rmm.pylibrmm.utils",
    "rmm.pylibrmm.cuda_stream_pool",
    "rmm.allocators",
    "rmm.allocators.cupy",
    "rmm.allocators.numba",
    "rmm.allocators.torch",
]

#: Classes whose members are compared: (module, class name).
CLASSES = [("rmm.mr", n) for n in [
    "ArenaMemoryResource", "BinningMemoryResource", "CallbackMemoryResource",
    "CudaAsyncMemoryResource", "CudaAsyncViewMemoryResource", "CudaMemoryResource",
    "DeviceMemoryResource", "FailureCallbackResourceAdaptor", "FixedSizeMemoryResource",
    "LimitingResourceAdaptor", "LoggingResourceAdaptor", "ManagedMemoryResource",
    "PinnedHostMemoryResource", "PoolMemoryResource", "PrefetchResourceAdaptor",
    "SamHeadroomMemoryResource", "StatisticsResourceAdaptor", "SystemMemoryResource",
    "TrackingResourceAdaptor", "UpstreamResourceAdaptor",
]] + [
    ("rmm.mr.experimental", "CudaAsyncManagedMemoryResource"),
    ("rmm", "DeviceBuffer"),
    ("rmm", "RMMError"),
    ("rmm", "level_enum"),
    ("rmm.pylibrmm.stream", "Stream"),
    ("rmm.pylibrmm", "CudaStreamFlags"),
    ("rmm.pylibrmm", "CudaStreamPool"),
    ("rmm.statistics", "Statistics"),
    ("rmm.statistics", "ProfilerRecords"),
    ("rmm.statistics", "ProfilerContext"),
    ("rmm._cuda.gpu", "CUDARuntimeError"),
    ("rmm._cuda.gpu", "CUDADriverError"),
    ("rmm.allocators.numba", "RMMNumbaManager"),
]

# Names every module has that say how it was built (.py or compiled), not what it offers.
_BUILD_NAMES = {"__builtins__", "__cached__", "__file__", "__loader__", "__spec__", "__path__",
                "__package__", "__doc__", "__name__", "__test__", "__pyx_capi__", "__annotations__",
                "__dict__", "__weakref__", "__module__", "__qualname__", "__firstlineno__",
                "__static_attributes__", "__slotnames__", "__pyx_vtable__", "__reduce_cython__",
                "__setstate_cython__", "__annotate__", "__conditional_annotations__"}


#: Names rmm-rs adds to RMM's modules on purpose (docs/differences.md#additions): left out on both
#: sides, so that a name RMM has and we lack, or an extra name not listed here, still diverges.
ADDITIONS = {
    "rmm.mr": {"HistoryResourceAdaptor", "VirtualPoolMemoryResource", "capture_allocations", "_capture"},
    "rmm.pylibrmm.memory_resource": {"HistoryResourceAdaptor", "VirtualPoolMemoryResource"},
    "rmm.pylibrmm.memory_resource._memory_resource": {"HistoryResourceAdaptor", "VirtualPoolMemoryResource"},
    "rmm.allocators.torch": {
        "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
        "release_graph_memory", "reset_peak_memory_stats",
        "_chain", "_device_index", "_install_empty_cache_hook", "_install_graph_hooks",
        "_max_reserved", "_reserved", "_statistics",
    },
}
#: Methods rmm-rs adds to RMM's classes (docs/differences.md#additions): graph capture and
#: giving wholly free memory back.
CLASS_ADDITIONS = {
    ("rmm.mr", "PoolMemoryResource"): {"begin_capture", "capture_pool_size", "captures", "end_capture",
                                       "release", "release_capture"},
}
#: Keyword-only parameters rmm-rs adds to RMM's functions (docs/differences.md#additions), cut
#: from the signature before it is recorded.
_ADDED_PARAMETERS = re.compile(r", \*, virtual_pool_allocator=False(?=\))")


def _dir(mod, modname):
    """``dir(mod)`` without the names rmm-rs adds on purpose."""
    added = ADDITIONS.get(modname, set())
    return [n for n in dir(mod) if n not in added]


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# What a compiled method's signature says about how it was compiled, not how it is called: RMM's
# Cython methods show `(self, ...)`, a `-> 'size_t'` return annotation and the default stream as
# an object; ours (PyO3) show `(self, /, ...)`, no return annotation and `...` for "the default
# stream". Calls that work on one work on the other, so these are cut from both before comparing.
_POSITIONAL_SELF = re.compile(r"^\(self, /(?=[,)])")
_RETURN = re.compile(r" -> .*$")
_STREAM_DEFAULT = re.compile(r"=(Ellipsis|<rmm\.pylibrmm\.stream\.Stream object at 0x\.\.\.>)")


def signature_of(obj):
    """inspect.signature as text (string annotations evaluated, object addresses cut), or what
    kept it from being read."""
    try:
        try:
            sig = inspect.signature(obj, eval_str=True)
        except Exception:  # noqa: BLE001 - an annotation that does not evaluate: keep it as text
            sig = inspect.signature(obj)
    except (TypeError, ValueError) as e:
        return {"no_signature": type(e).__name__}
    # Annotations are compared no more than return annotations: RMM's come from its stubs and
    # Cython, ours from a native module that has none; a call cannot tell them apart.
    sig = sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
                      return_annotation=inspect.Signature.empty)
    text = _ADDRESS.sub(" at 0x...", str(sig))
    text = _POSITIONAL_SELF.sub("(self", _RETURN.sub("", text))
    text = _ADDED_PARAMETERS.sub("", text)
    return _STREAM_DEFAULT.sub("=<default stream>", text)


def is_foreign(name, value):
    """True for a module-level name that only re-exports something from outside rmm (``np``,
    ``Optional``, ``warnings``): such names are listed apart from rmm's own."""
    if name.startswith("__"):
        return False
    if inspect.ismodule(value):
        origin = value.__name__
    elif inspect.isclass(value) or inspect.isroutine(value) or (
        callable(value) and hasattr(value, "__qualname__")
    ):
        origin = getattr(value, "__module__", None) or ""
    else:
        origin = type(value).__module__
    return not origin.startswith("rmm")


def _is_builtin_class(value):
    """True for a builtin class (``BaseException``), which Cython leaves in a compiled module's
    namespace: how the module was built, not an import of its author's."""
    return inspect.isclass(value) and value.__module__ == "builtins"


def _is_build_name(name):
    return name in _BUILD_NAMES or name.startswith("__pyx")


# Dunders that say how a class was built (Cython's pickling stubs, __init__ beside __cinit__), not
# what it does: what they do is compared by the behaviour scenarios.
_BUILD_DUNDERS = {"__init__", "__new__", "__reduce__", "__setstate__", "__reduce_ex__",
                  "__getstate__", "__init_subclass__", "__subclasshook__", "__class_getitem__"}


def member_kind(cls, name):
    """'property', 'method', 'staticmethod', 'classmethod' or 'value' for a class member."""
    try:
        raw = inspect.getattr_static(cls, name)
    except AttributeError:
        return "missing"
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if isinstance(raw, classmethod) or type(raw).__name__ == "classmethod_descriptor":
        return "classmethod"
    if isinstance(raw, property) or inspect.isgetsetdescriptor(raw) or inspect.ismemberdescriptor(
        raw
    ):
        return "property"
    if callable(raw) or inspect.ismethoddescriptor(raw):
        return "method"
    return "value"


def _import(t, modname):
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as e:
        missing = getattr(e, "name", "") or ""
        if missing and not missing.startswith("rmm"):
            t.skip(f"{modname} needs {missing}, not installed")
        t.rec("import", {"raises": type(e).__name__, "message": str(e)})
    except Exception as e:  # noqa: BLE001
        t.rec("import", {"raises": type(e).__name__})
    return None


def _names_scenario(modname):
    def run(t):
        mod = _import(t, modname)
        if mod is None:
            return
        # `_native` is rmm-rs's compiled core: the one name it must add.
        names = [n for n in _dir(mod, modname) if not _is_build_name(n) and n != "_native"
                 and not is_foreign(n, getattr(mod, n))]
        t.rec("public", sorted(n for n in names if not n.startswith("_")))
        t.rec("private", sorted(n for n in names if n.startswith("_")))
        t.rec("__all__", sorted(n for n in getattr(mod, "__all__", []) if n not in ADDITIONS.get(modname, ()))
              if hasattr(mod, "__all__") else None)
        t.rec("is_package", hasattr(mod, "__path__"))

    return run


def _imports_scenario(modname):
    def run(t):
        mod = _import(t, modname)
        if mod is None:
            return
        t.rec("foreign", sorted(n for n in _dir(mod, modname) if not _is_build_name(n)
                                and is_foreign(n, getattr(mod, n))
                                and not _is_builtin_class(getattr(mod, n))))

    return run


def _kinds_scenario(modname):
    def run(t):
        mod = _import(t, modname)
        if mod is None:
            return
        for n in sorted(_dir(mod, modname)):
            if n.startswith("_") or is_foreign(n, getattr(mod, n)):
                continue
            v = getattr(mod, n)
            if inspect.ismodule(v):
                kind = "module:" + v.__name__
            elif inspect.isclass(v):
                kind = "class"
            elif callable(v):
                kind = "callable"
            else:
                kind = "value:" + type(v).__name__
            t.rec(n, kind)

    return run


def _signatures_scenario(modname):
    def run(t):
        mod = _import(t, modname)
        if mod is None:
            return
        for n in sorted(_dir(mod, modname)):
            if n.startswith("_") or is_foreign(n, getattr(mod, n)):
                continue
            v = getattr(mod, n)
            if callable(v) and not inspect.isclass(v):
                t.rec(n, signature_of(v))

    return run


def _class_scenario(modname, clsname):
    def run(t):
        mod = _import(t, modname)
        if mod is None:
            return
        cls = t.call("getattr", getattr, mod, clsname, conv=lambda c: c.__name__)
        if cls is None:
            return
        t.rec("module", cls.__module__)
        t.rec("qualname", cls.__qualname__)
        t.rec("mro", [c.__name__ for c in cls.__mro__])
        added = CLASS_ADDITIONS.get((modname, clsname), set())
        members = sorted(n for n in dir(cls) if not n.startswith("_") and n not in added)
        t.rec("members", members)
        dunders = sorted(n for n in dir(cls) if n.startswith("__") and n not in _BUILD_NAMES
                         and n not in _BUILD_DUNDERS and n in vars(cls))
        t.rec("own_dunders", dunders)
        for n in members:
            kind = member_kind(cls, n)
            entry = {"kind": kind}
            if kind in ("method", "staticmethod", "classmethod"):
                entry["signature"] = signature_of(getattr(cls, n))
            t.rec(n, entry)
        # No constructor signature: RMM's Cython classes have none to read (ValueError), ours
        # have one; the resources/ctor scenarios call each constructor instead.

    return run


for _m in MODULES:
    register(_names_scenario(_m), __name__, f"names/{_m}", needs_gpus=0)
    register(_kinds_scenario(_m), __name__, f"kinds/{_m}", needs_gpus=0)
    register(_imports_scenario(_m), __name__, f"imports/{_m}", needs_gpus=0)
    register(_signatures_scenario(_m), __name__, f"signatures/{_m}", needs_gpus=0)
for _m, _c in CLASSES:
    register(_class_scenario(_m, _c), __name__, f"class/{_m}.{_c}", needs_gpus=0)


def _level_enum_members(t):
    import rmm

    t.rec("members", [(m.name, int(m.value)) for m in rmm.level_enum])
    t.rec("is_int", isinstance(rmm.level_enum.info, int))


register(_level_enum_members, __name__, "level_enum_members", needs_gpus=0)


def _stream_flags_members(t):
    from rmm.pylibrmm import CudaStreamFlags

    t.rec("members", [(m.name, int(m.value)) for m in CudaStreamFlags])


register(_stream_flags_members, __name__, "stream_flags_members", needs_gpus=0)


def _version(t):
    import rmm

    t.rec("version", rmm.__version__)
    t.rec("git_commit_type", type(rmm.__git_commit__).__name__)


register(_version, __name__, "version", needs_gpus=0)


def _parse_bytes(t):
    import rmm.pylibrmm.helper as helper

    parse_bytes = getattr(helper, "parse_bytes", None)
    t.rec("exported", parse_bytes is not None)
    if parse_bytes is None:
        return
    for s in [0, 1, 1024, "1", "1B", "1KB", "1kB", "1KiB", "1 MiB", "1.5GB", "2GiB", "10 MB",
              "1e3", "5kb", "1TiB", "1 kilobyte", "abc", "", "-1", "1.5", -5, 3.5, None, "MB"]:
        t.call(f"parse_bytes({s!r})", parse_bytes, s)


register(_parse_bytes, __name__, "parse_bytes", needs_gpus=0)


def _rmm_error(t):
    import rmm

    e = rmm.RMMError(3, "boom")
    t.rec("errcode", e.errcode)
    t.rec("str", str(e))
    t.rec("args", list(e.args))
    t.rec("is_exception", isinstance(e, Exception))
    t.call("one_arg", rmm.RMMError, "x")


register(_rmm_error, __name__, "rmm_error", needs_gpus=0)
