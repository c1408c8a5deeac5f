#!/usr/bin/env python3
"""Finds modules of a Rust crate that import each other, directly or round a circle.

    python3 tests/tools/module_cycles.py SRC_DIR [SRC_DIR ...]

Every path a file names (`use crate::a::b`, `super::x`, `self::y`, or an inline `crate::a::f()`)
is an edge from the file's module to the deepest module the path names. Edges are compared
between siblings: an edge from `a::x` to `b::y` is an edge from `a` to `b` among the crate's
top-level modules, and one from `a::x` to `a::y` an edge from `x` to `y` among the children of
`a`. A module that uses its own descendants, or a child that uses its parent, is not a circle:
a child is part of its parent's implementation. Any strongly connected group of two or more
siblings is printed with the imports that make it, and the exit status is 1. With no circle it
prints one line per crate and exits 0.

`driver` is also checked to import nothing above it (the driver door is the lowest layer): it may
use only top-level modules that themselves use nothing of the crate beyond such modules (like
`error`). Pass --leaf MODULE to name other such modules, --no-default-leaf to drop it.
"""
import os
import re
import sys

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_RE = re.compile(r"\buse\s+(crate|super|self)::([^;]*);", re.S)
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def file_module(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel == ["lib"] or rel == ["main"]:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel[0] == "bin":
        return None
    return tuple(rel)


def expand_use(root, body):
    """The full paths of one `use root::body;` (braces expanded), as tuples starting at root."""
    body = re.sub(r"\s+", "", body)
    out = []

    def walk(prefix, s):
        depth, start, parts = 0, 0, []
        for i, c in enumerate(s):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for p in parts:
            if not p:
                continue
            if "{" in p:
                head, rest = p.split("{", 1)
                walk(prefix + [x for x in head.split("::") if x], rest[: rest.rindex("}")])
            else:
                p = p.split("as")[0] if re.search(r"as[A-Za-z_]", p) and "::" not in p.split("as")[-1] else p
                out.append(prefix + [x for x in p.split("::") if x])

    walk([root], body)
    return out


def resolve(module, segs, modules):
    """The deepest known module that a path (starting with crate/super/self) names."""
    head, rest = segs[0], list(segs[1:])
    if head == "crate":
        base = ()
    elif head == "self":
        base = module
    else:
        base = module[:-1]
        while rest and rest[0] == "super":
            base = base[:-1]
            rest.pop(0)
    best = base
    cur = base
    for s in rest:
        cur = cur + (s,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def check(src, leaves):
    files = {}
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(dirpath, n)
                m = file_module(src, p)
                if m is not None:
                    files[p] = m
    modules = set(files.values())
    for m in list(modules):
        for i in range(len(m)):
            modules.add(m[:i])
    edges = {}  # (parent, child_a, child_b) -> [example]
    leaf_breaks = []
    for path, module in sorted(files.items()):
        text = strip_comments(open(path, encoding="utf-8").read())
        paths = [tuple(p) for root, body in USE_RE.findall(text) for p in expand_use(root, body)]
        paths += [tuple([m.group(1)] + m.group(2).split("::")[1:]) for m in PATH_RE.finditer(text)]
        for segs in paths:
            target = resolve(module, segs, modules)
            for leaf in leaves:
                if module[:1] == (leaf,) and target[:1] != (leaf,) and target != ():
                    leaf_breaks.append((path, target[0], "::".join(segs)))
            k = 0
            while k < min(len(module), len(target)) and module[k] == target[k]:
                k += 1
            if k == len(module) or k == len(target):
                continue  # an ancestor or a descendant
            key = (module[:k], module[k], target[k])
            edges.setdefault(key, []).append(f"{os.path.relpath(path, src)}: {'::'.join(segs)}")
    problems = []
    parents = {}
    for parent, a, b in edges:
        parents.setdefault(parent, {}).setdefault(a, set()).add(b)
    for parent, graph in sorted(parents.items()):
        for scc in sccs(graph):
            if len(scc) < 2:
                continue
            where = "::".join(parent) or "crate"
            lines = [f"circle among the children of {where}: {' <-> '.join(sorted(scc))}"]
            for a in sorted(scc):
                for b in sorted(graph.get(a, ())):
                    if b in scc:
                        lines.append(f"  {a} -> {b}: {edges[(parent, a, b)][0]}")
            problems.append("\n".join(lines))
    top = parents.get((), {})
    foundation = set()
    changed = True
    while changed:
        changed = False
        for m in {m[0] for m in modules if m} - foundation:
            if top.get(m, set()) <= foundation:
                foundation.add(m)
                changed = True
    seen = set()
    for path, target, p in leaf_breaks:
        if target not in foundation and (path, p) not in seen:
            seen.add((path, p))
            problems.append(f"{os.path.relpath(path, src)} imports {p}, above the driver door")
    return problems, len(files)


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(graph) | {b for bs in graph.values() for b in bs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    leaves = ["driver"]
    dirs = []
    it = iter(argv)
    for a in it:
        if a == "--leaf":
            leaves.append(next(it))
        elif a == "--no-default-leaf":
            leaves.remove("driver")
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            dirs.append(a)
    if not dirs:
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    for d in dirs:
        problems, n = check(d, leaves)
        for p in problems:
            print(f"{d}: {p}")
        if problems:
            status = 1
        else:
            print(f"module_cycles: {d}: {n} files, no circle")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
