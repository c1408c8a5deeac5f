#!/usr/bin/env python3
"""Builds the Python API reference of the installed ``rmm`` and ``librmm_cffi`` with pdoc.

Every public module (no leading underscore in any part of its name) gets a page, from its
docstrings and the ``.pyi`` stubs beside the native module. A module that imports a library not
installed here (``rmm.allocators.numba`` needs Numba and a CUDA runtime) is left out and named;
any other import error, and any warning pdoc gives, fails the build.

    python api_docs.py OUT_DIR
"""

import importlib
import importlib.util
import pathlib
import pkgutil
import sys
import warnings

# Modules that need a library the reference build does not install.
OPTIONAL = {"rmm.allocators.numba": "Numba and a CUDA runtime"}
# Stubs that name a library's types: without it, the page comes from the module itself.
STUBS_NEED = {"rmm.allocators.torch": "torch"}


def public_modules(top):
    package = importlib.import_module(top)
    names = [top]
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def main(out_dir):
    from pdoc import doc, render

    warnings.simplefilter("error")
    for name in OPTIONAL:  # pdoc's module list tries to import it: that alone is expected
        warnings.filterwarnings("ignore", message=f"Couldn't import {name}:")
    for name, library in STUBS_NEED.items():
        if importlib.util.find_spec(library) is None:
            print(f"api_docs: {name} documented without its stub's types (needs {library})")
            warnings.filterwarnings("ignore", message=f"Error parsing type stubs for {name}:")
    modules = {}
    for name in public_modules("rmm") + public_modules("librmm_cffi"):
        if name in OPTIONAL:
            print(f"api_docs: {name} left out (needs {OPTIONAL[name]})")
            continue
        modules[name] = doc.Module(importlib.import_module(name))
    out = pathlib.Path(out_dir)
    for name, module in modules.items():
        page = out / (name.replace(".", "/") + ".html")
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(render.html_module(module, modules))
    (out / "index.html").write_text(render.html_index(modules))
    (out / "search.js").write_text(render.search_index(modules))
    print(f"api_docs: {len(modules)} modules documented in {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
