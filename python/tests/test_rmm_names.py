"""Every module-level name of RMM 26.10's Python package exists in ours, of the same kind, and
functions, constructors and methods take the same parameters (names, kinds, defaults).

The names are a fact read from RMM's own package: ``data/rmm_26_10_names.json``, written by
``tools/extract_rmm_names.py`` run in a venv with RMM 26.10's wheels. A name that RMM imports from
a package which is not installed here (numba, cupy, cuda-bindings) is checked only where that
package is importable.

RMM's type stubs bind names its modules do not have at run time (Cython's C-level
``helper.parse_bytes`` and ``utils.as_stream``, names a module only ``cimport``s, a Protocol for
type checkers): every name a stub of RMM's binds, the stub type checkers read for our module binds
too, of the same kind, and the run-time names stay RMM's run-time names.
"""

import ast
import importlib
import importlib.util
import inspect
import json
import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent
DATA = json.loads((HERE / "data" / "rmm_26_10_names.json").read_text())
MODULES = DATA["modules"]
STUBS = DATA["stubs"]


def _load_extractor():
    spec = importlib.util.spec_from_file_location("extract_rmm_names", HERE / "tools" / "extract_rmm_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXTRACTOR = _load_extractor()
# Packages outside the standard library that RMM's modules import names from.
THIRD_PARTY = {"cuda", "numba", "numba_cuda", "cupy", "torch", "llvmlite"}
# Functions Cython adds to a module of cdef classes, and the builtins it caches as module names
# (BaseException): not part of RMM's API.
CYTHON_NAMES = {"__reduce_cython__", "__setstate_cython__"}
# Members not matched yet, each with the reason. RMM's `Stream._init_from_*` fill in a
# half-made Stream from its constructor (ours is immutable once made; `Stream(obj)` does the same
# work); RMM's `UpstreamResourceAdaptor(upstream_mr)` alone makes an object with no resource whose
# allocations crash, so ours cannot be constructed directly (docs/differences.md).
KNOWN_GAPS = {
    "Stream._init_from_cuda_stream_protocol",
    "Stream._init_from_cupy_stream",
    "Stream._init_from_numba_stream",
    "UpstreamResourceAdaptor.__init__",
}
# Parameters rmm-rs adds to RMM's functions: keyword-only, after all of RMM's, with a default, so
# every call written for RMM means the same. They are left out before the comparison.
ADDITIONS = {"virtual_pool_allocator"}
# Values that differ by build: the commit a package was built from.
BUILD_VALUES = {"__git_commit__"}


def _importable(top):
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _missing_dependency(entry):
    """The third-party package a name comes from, where it is not installed here."""
    origin = entry.get("origin") or ""
    top = origin.split(".")[0]
    # `cuda` is a namespace package: a folder of that name (left by another CUDA package) does
    # not make cuda-bindings importable.
    package = "cuda.bindings" if top == "cuda" else top
    if top in THIRD_PARTY and not _importable(package):
        return top
    return None


def _is_generic(params):
    """A signature that says nothing (Cython's ``(self, *args, **kwargs)``)."""
    kinds = [k for n, k, _ in params if n not in ("self", "cls")]
    return kinds == ["VAR_POSITIONAL", "VAR_KEYWORD"]


def _expected(entry):
    """The parameters to check against: the compiled object's own when it shows them, else the
    stub's; None when neither tells."""
    for key in ("signature", "stub_signature"):
        params = entry.get(key)
        if params is not None and not _is_generic(params):
            return params
    return None


def _default_problem(name, want, got):
    """Why ``got`` (an inspect default) differs from RMM's ``want``; None when it matches."""
    empty = inspect.Parameter.empty
    if "none" in want:
        return None if got is empty else f"{name}: has a default ({got!r}), RMM's has none"
    if got is empty:
        return f"{name}: has no default, RMM's has one"
    if "value" in want:
        value = want["value"]
        value = tuple(value) if isinstance(value, list) else value
        return None if got == value and type(got) is type(value) else f"{name}: default {got!r}, RMM's {value!r}"
    if "object" in want:
        # A native (PyO3) function's signature can show only literal defaults: `...` there stands
        # for an object default (DEFAULT_STREAM), which the behaviour tests check.
        if got is Ellipsis:
            return None
        return None if type(got).__name__ == want["object"] else f"{name}: default {got!r}, RMM's a {want['object']}"
    if "enum" in want:
        have = f"{type(got).__name__}.{getattr(got, 'name', got)}"
        return None if have == want["enum"] else f"{name}: default {have}, RMM's {want['enum']}"
    source = want["source"]
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return None  # a name (DEFAULT_STREAM) or `...`: a default is all the stub says
    if value is Ellipsis:
        return None
    return None if got == value and type(got) is type(value) else f"{name}: default {got!r}, RMM's {source}"


def _signature_problems(where, want, obj, drop_first=False):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return [f"{where}: no signature to read (RMM's: {[p[0] for p in want]})"]
    got = list(sig.parameters.values())
    want = [p for p in want if p[0] not in ("self", "cls")]
    if drop_first or (got and got[0].name in ("self", "cls")):
        got = got[1:] if got and got[0].name in ("self", "cls") else got
    while got and got[-1].name in ADDITIONS and got[-1].kind is inspect.Parameter.KEYWORD_ONLY:
        if got[-1].default is inspect.Parameter.empty:
            return [f"{where}: the added parameter {got[-1].name} has no default"]
        got = got[:-1]
    if [p.name for p in got] != [p[0] for p in want]:
        return [f"{where}: parameters {[p.name for p in got]}, RMM's {[p[0] for p in want]}"]
    problems = []
    for g, (name, kind, default) in zip(got, want):
        if g.kind.name != kind:
            problems.append(f"{where}: {name} is {g.kind.name}, RMM's {kind}")
        problem = _default_problem(name, default, g.default)
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


def _kind_of(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "value"


def _member_problems(module, name, cls, entry):
    problems = []
    for member, spec in entry.get("members", {}).items():
        where = f"{module}.{name}.{member}"
        if member in ("__reduce__", "__setstate__", "__cinit__", "__dealloc__"):
            continue
        if f"{name}.{member}" in KNOWN_GAPS:
            continue  # pickling and Cython's own hooks: every Python class has its own
        if not hasattr(cls, member):
            problems.append(f"{where}: missing")
            continue
        if spec["kind"] == "property":
            raw = inspect.getattr_static(cls, member)
            if callable(raw) and not isinstance(raw, property):
                problems.append(f"{where}: a method, RMM's is a property")
            continue
        want = _expected(spec)
        if want is None:
            continue
        if member == "__init__":
            problems += _signature_problems(where, want, cls)
        elif spec["kind"] in ("method", "staticmethod", "classmethod"):
            problems += _signature_problems(where, want, getattr(cls, member))
    return problems


# Names whose value RMM sets from an optional library at import: the data was read where neither
# library is installed (RMM's value None); where the library is installed both hold its object.
DEPENDS_ON_INSTALLED = {
    ("rmm.allocators.cupy", "cupy"): "cupy",
    ("rmm.allocators.torch", "rmm_torch_allocator"): "torch",
}


def _installed(name):
    return importlib.util.find_spec(name) is not None


def _module_problems(module):
    try:
        ours = importlib.import_module(module)
    except ImportError as e:
        top = (e.name or "").split(".")[0]
        if top in THIRD_PARTY:
            pytest.skip(f"{module} needs {top}, which is not installed")
        raise
    problems = []
    for name, entry in MODULES[module].items():
        if name in CYTHON_NAMES or entry.get("origin") == "builtins" or _missing_dependency(entry):
            continue
        library = DEPENDS_ON_INSTALLED.get((module, name))
        if library is not None and _installed(library):
            continue
        if not hasattr(ours, name):
            problems.append(f"{module}.{name}: missing ({entry['kind']})")
            continue
        obj = getattr(ours, name)
        if _kind_of(obj) != entry["kind"]:
            problems.append(f"{module}.{name}: a {_kind_of(obj)}, RMM's a {entry['kind']}")
            continue
        if entry["kind"] == "value" and type(obj).__name__ != entry["type"]:
            problems.append(f"{module}.{name}: a {type(obj).__name__}, RMM's a {entry['type']}")
        if "value" in entry and name not in BUILD_VALUES and obj != entry["value"]:
            problems.append(f"{module}.{name}: {obj!r}, RMM's {entry['value']!r}")
        if not (entry.get("origin") or "").startswith("rmm"):
            continue  # imported by RMM from elsewhere: the name is all that is ours to match
        want = _expected(entry)
        if entry["kind"] == "function" and want is not None:
            problems += _signature_problems(f"{module}.{name}", want, obj)
        if entry["kind"] == "class":
            problems += _member_problems(module, name, obj, entry)
    return problems


def test_the_data_is_rmm_26_10():
    assert DATA["rmm_version"].startswith("26.10")
    assert len(MODULES) >= 20


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_has_rmm_names_and_signatures(module):
    problems = _module_problems(module)
    assert not problems, "\n".join(problems)


def _our_stub(module):
    """The file a type checker reads for our module: the stub beside it, else its source."""
    origin = importlib.util.find_spec(module).origin
    stub = os.path.splitext(origin)[0] + ".pyi"
    return stub if os.path.exists(stub) else origin


def test_the_data_has_rmms_stub_only_names():
    assert STUBS["rmm.pylibrmm.helper"]["parse_bytes"] == {"kind": "function"}
    assert "parse_bytes" not in MODULES["rmm.pylibrmm.helper"]
    assert STUBS["rmm.pylibrmm.utils"]["as_stream"] == {"kind": "function"}
    assert STUBS["rmm.pylibrmm.cuda_stream_pool"]["CudaStreamFlags"]["from"] == "rmm.pylibrmm.stream"
    assert STUBS["rmm.pylibrmm.device_buffer"]["SupportsCUDAArrayInterface"] == {"kind": "class"}


@pytest.mark.parametrize("module", sorted(STUBS))
def test_module_stub_binds_rmms_stub_names(module):
    ours = EXTRACTOR.stub_names(_our_stub(module))
    problems = []
    for name, entry in STUBS[module].items():
        if name not in ours:
            problems.append(f"{module}.{name}: missing from {os.path.basename(_our_stub(module))} ({entry['kind']})")
        elif ours[name]["kind"] != entry["kind"]:
            problems.append(f"{module}.{name}: a {ours[name]['kind']} in our stub, RMM's a {entry['kind']}")
        elif entry["kind"] == "import" and entry["from"].startswith("rmm") and ours[name]["from"] != entry["from"]:
            problems.append(f"{module}.{name}: imported from {ours[name]['from']}, RMM's from {entry['from']}")
    assert not problems, "\n".join(problems)
