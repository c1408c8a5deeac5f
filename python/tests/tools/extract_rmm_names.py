"""Writes the module-level names of RMM's Python package, with their signatures, as JSON.

Run it with the interpreter of a venv into which RMM's wheels are installed (``rmm-cu13``,
``librmm-cu13``, ``rapids-logger`` and their dependency ``cuda-bindings``); RMM's package imports
without a GPU. The JSON is the fact that ``test_rmm_names.py`` checks our package against:

    python extract_rmm_names.py > ../data/rmm_26_10_names.json

For each module: every name ``dir()`` lists but the interpreter's own dunders, with its kind
(``module``, ``class``, ``function``, ``value``), the module it was defined in (``origin``), and
for functions and classes the signature (each parameter's name, kind and default). For a class,
the same for each member its own ``__dict__`` defines (methods, properties, attributes).

Under ``stubs``, for each module with a ``.pyi`` stub beside it: every name the stub binds at
module level (``function``, ``class``, ``value``, or ``import`` with the module it comes from),
imports included. A compiled module's stub declares names that ``dir()`` does not list: Cython's
C-level functions (``cdef``: ``helper.parse_bytes``, ``utils.as_stream``), names a module only
``cimport``s (``cuda_stream_pool.CudaStreamFlags``) and classes for type checkers only
(``device_buffer.SupportsCUDAArrayInterface``). Type checkers see them; ``import`` does not.
"""

import ast
import enum
import importlib
import os
import inspect
import json
import sys

# Every module of RMM 26.10's Python package (each file under rmm/ that Python can import).
MODULES = [
    "rmm",
    "rmm._cuda",
    "rmm._cuda.gpu",
    "rmm._version",
    "rmm.allocators",
    "rmm.allocators.cupy",
    "rmm.allocators.numba",
    "rmm.allocators.torch",
    "rmm.librmm",
    "rmm.librmm._logger",
    "rmm.mr",
    "rmm.mr.experimental",
    "rmm.pylibrmm",
    "rmm.pylibrmm.cuda_stream_pool",
    "rmm.pylibrmm.device_buffer",
    "rmm.pylibrmm.helper",
    "rmm.pylibrmm.logger",
    "rmm.pylibrmm.memory_resource",
    "rmm.pylibrmm.memory_resource._memory_resource",
    "rmm.pylibrmm.memory_resource.experimental",
    "rmm.pylibrmm.stream",
    "rmm.pylibrmm.utils",
    "rmm.rmm",
    "rmm.statistics",
]

# Dunders every module (or every Cython module) has; they say nothing about RMM's API.
MODULE_DUNDERS = {
    "__builtins__", "__cached__", "__doc__", "__file__", "__loader__", "__name__", "__package__",
    "__path__", "__spec__", "__pyx_capi__", "__test__", "__annotations__", "__getattr__",
    "__dir__", "__pyx_unpickle_Enum",
}
# Members every class has (object's, and those Cython or dataclasses add on their own).
CLASS_SKIP = {
    "__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__pyx_vtable__",
    "__reduce_cython__", "__setstate_cython__", "__annotations__", "__dataclass_fields__",
    "__dataclass_params__", "__match_args__", "__hash__", "__static_attributes__",
    "__firstlineno__", "__orig_bases__", "__parameters__", "__abstractmethods__", "_abc_impl",
    "__slots__", "__new__", "__init_subclass__", "__subclasshook__",
}
LITERALS = (type(None), bool, int, float, str)


def default_of(value):
    """The default as JSON: a literal as itself, anything else as ``<TypeName>``."""
    if value is inspect.Parameter.empty:
        return {"none": True}
    if isinstance(value, enum.Enum):
        return {"enum": f"{type(value).__name__}.{value.name}"}
    if isinstance(value, LITERALS):
        return {"value": value}
    if isinstance(value, tuple) and all(isinstance(v, LITERALS) for v in value):
        return {"value": list(value)}
    return {"object": type(value).__name__}


def signature_of(obj):
    """The parameters of ``obj`` as ``[name, kind, default]``; None where Python cannot tell."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, default_of(p.default)] for p in sig.parameters.values()]


def kind_of(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def origin_of(obj):
    if inspect.ismodule(obj):
        return obj.__name__
    return getattr(obj, "__module__", None) if kind_of(obj) in ("class", "function") else None


def member_of(cls, name, raw):
    """One member of a class from its ``__dict__`` entry."""
    if isinstance(raw, property) or type(raw).__name__ == "getset_descriptor":
        return {"kind": "property", "settable": getattr(raw, "fset", True) is not None}
    if isinstance(raw, (staticmethod, classmethod)):
        return {"kind": type(raw).__name__, "signature": signature_of(getattr(cls, name))}
    if inspect.isclass(raw):
        return {"kind": "class"}
    if callable(raw) or type(raw).__name__ in ("method_descriptor", "wrapper_descriptor"):
        return {"kind": "method", "signature": signature_of(raw)}
    if type(raw).__name__ == "member_descriptor":
        return {"kind": "attribute"}
    return {"kind": "value", "type": type(raw).__name__}


def describe(obj):
    out = {"kind": kind_of(obj), "origin": origin_of(obj)}
    if out["kind"] == "value":
        out["type"] = type(obj).__name__
        if isinstance(obj, LITERALS):
            out["value"] = obj
    elif out["kind"] == "function":
        out["signature"] = signature_of(obj)
    elif out["kind"] == "class":
        out["bases"] = [b.__name__ for b in obj.__bases__]
        out["signature"] = signature_of(obj)
        out["members"] = {
            name: member_of(obj, name, raw)
            for name, raw in sorted(vars(obj).items())
            if name not in CLASS_SKIP
        }
        if issubclass(obj, enum.Enum):
            out["enum"] = {m.name: m.value for m in obj}
    return out


def stub_params(fn):
    """The parameters of a function in a ``.pyi`` stub, as ``[name, kind, default]``; a default as
    its source text (``{"source": "DEFAULT_STREAM"}``)."""
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append([arg.arg, kind, {"none": True} if default is None else {"source": ast.unparse(default)}])
    if a.vararg:
        out.append([a.vararg.arg, "VAR_POSITIONAL", {"none": True}])
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append([arg.arg, "KEYWORD_ONLY", {"none": True} if default is None else {"source": ast.unparse(default)}])
    if a.kwarg:
        out.append([a.kwarg.arg, "VAR_KEYWORD", {"none": True}])
    return out


def stub_of(module):
    """Signatures from the ``.pyi`` stub beside a compiled module: {"f": params, "C.m": params}."""
    path = getattr(module, "__file__", None) or ""
    stub = os.path.join(os.path.dirname(path), os.path.basename(path).split(".")[0] + ".pyi")
    if not path.endswith(".so") or not os.path.exists(stub):
        return {}
    out = {}
    for node in ast.parse(open(stub).read()).body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = stub_params(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = stub_params(item)
    return out


def stub_path(module):
    """The ``.pyi`` stub beside a module's file (compiled or source), or None."""
    path = getattr(module, "__file__", None) or ""
    stub = os.path.join(os.path.dirname(path), os.path.basename(path).split(".")[0] + ".pyi")
    return stub if path and os.path.exists(stub) else None


def stub_names(path):
    """Every name a stub (or a module's source) binds at module level: ``{"kind": "function"}``,
    ``"class"``, ``"value"``, or ``{"kind": "import", "from": module}``."""
    out = {}
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = {"kind": "function"}
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {"kind": "class"}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = {"kind": "import", "from": node.module}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                out[name] = {"kind": "import", "from": alias.name if alias.asname else name}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out[target.id] = {"kind": "value"}
    return out


def add_stub(entry, name, stubs):
    """Adds the stub's signature where the compiled object does not show a usable one."""
    if entry["kind"] == "function" and name in stubs:
        entry["stub_signature"] = stubs[name]
    if entry["kind"] == "class":
        for key, params in stubs.items():
            cls, _, member = key.partition(".")
            if cls == name:
                entry["members"].setdefault(member, {"kind": "method"})["stub_signature"] = params


def main():
    result, stubs_of = {}, {}
    for name in MODULES:
        module = importlib.import_module(name)
        path = stub_path(module)
        if path is not None:
            stubs_of[name] = stub_names(path)
        names = sorted(n for n in dir(module) if n not in MODULE_DUNDERS)
        stubs = stub_of(module)
        result[name] = {n: describe(getattr(module, n)) for n in names}
        for n, entry in result[name].items():
            if entry["origin"] == name:
                add_stub(entry, n, stubs)
    json.dump(
        {"rmm_version": importlib.import_module("rmm").__version__, "modules": result, "stubs": stubs_of},
        sys.stdout, indent=1, sort_keys=True,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
