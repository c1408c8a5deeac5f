#!/usr/bin/env python3
"""Where the instructions of one allocate-or-free go, from a cachegrind run of
benches/cpp/host_pool_trace.cu built with line tables (docs/benchmarks.md, "Where the
nanoseconds go").

    python3 benches/cachegrind_account.py CACHEGRIND_OUT OPS

Runs cg_annotate on CACHEGRIND_OUT, gives each (source file, function) row to one part of the
path by its source file, and prints instructions per operation for each part (OPS: the operations
the run printed). The trace's own work (the replay loop, its random numbers, the loader) is
shown apart and left out of the total of the path.
"""

import re
import subprocess
import sys

# (part, patterns of the source file), first match wins; the order matters where a pattern is
# general (the Rust standard library's inlined helpers are counted where they are inlined).
PARTS = [
    ("trace (not the path)", [r"host_pool_trace\.cu", r"/math/", r"/elf/", r"stl_vector\.h",
                              r"vector\.tcc", r"new_allocator\.h", r"^\?\?\?$"]),
    ("C++ resource_ref dispatch (CCCL)", [r"/cccl/cuda/"]),
    ("bridge (C++ header and Rust entry)", [r"rust_resource\.hpp", r"bridge\.rs\.h",
                                            r"shared_ptr_base\.h", r"cpp/src/bridge"]),
    ("stream key and shard lookup", [r"src/stream\.rs", r"stream_key\.rs", r"stream_identity\.rs",
                                     r"shard_map\.rs", r"pool/shards\.rs"]),
    ("lock", [r"sync/atomic\.rs", r"spin_lock\.rs"]),
    ("free list (size classes, blocks, address map)", [r"coalescing_pool", r"free_list\.rs",
                                                       r"size_class\.rs", r"block\.rs",
                                                       r"address_map\.rs"]),
    ("pool bookkeeping (fast path, claims)", [r"pool/fast_path\.rs", r"claims\.rs", r"src/resource/"]),
    ("Rust std helpers inlined (bounds checks, vectors)", [r"/library/"]),
]


def part_of(path):
    for name, patterns in PARTS:
        if any(re.search(p, path) for p in patterns):
            return name
    return "other"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, ops = sys.argv[1], int(sys.argv[2])
    text = subprocess.run(["cg_annotate", "--show-percs=no", "--auto=no", out], capture_output=True,
                          text=True, check=True).stdout
    # The table after the "file:function" header, up to the next rule.
    table = text.split("file:function", 1)[1].split("\n", 2)[2].split("\n---", 1)[0]
    rows = re.findall(r"^\s*([\d,]+)\s+(\S[^:]*):(.+)$", table, re.M)
    totals = {}
    for ir, path, _function in rows:
        part = part_of(path)
        totals[part] = totals.get(part, 0) + int(ir.replace(",", ""))
    path_total = sum(v for k, v in totals.items() if k != PARTS[0][0])
    print(f"{'part':52} {'instr/op':>9} {'share':>7}")
    for name, _ in PARTS[1:] + [("other", [])]:
        if name in totals:
            v = totals[name]
            print(f"{name:52} {v / ops:9.1f} {100 * v / path_total:6.1f}%")
    print(f"{'the path through C++ (total)':52} {path_total / ops:9.1f}")
    print(f"{PARTS[0][0]:52} {totals.get(PARTS[0][0], 0) / ops:9.1f}")


if __name__ == "__main__":
    main()
