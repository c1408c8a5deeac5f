#!/usr/bin/env bash
# Several builds of alloc_bench in alternating rounds over the rows the targets name, one table of
# medians: for comparing a build with the one before it and with RMM 26.10 on one GPU, in one run.
#
#   bash benches/alternate.sh BINARY...      # e.g. .bench/alloc_bench_before .bench/alloc_bench_rmm_rs
#                                            #      .bench/alloc_bench_rmm_26_10
#
# Each round runs every group of rows (a resource and its workloads, see `groups` below) once per
# binary; the binary that goes first moves by one each round, so that none always inherits a busy
# or a freshly emptied device. One-thread rows are pinned to one CPU (BENCH_CPU, default 2) where
# taskset can; thread rows run unpinned. The table has one column per binary (its file name), the
# median of the rounds, and the ratios of the column compared (the last-but-one where there are
# three binaries or more, else the last) to the first and, with three or more, to the last
# (before / ours / RMM: ours over before, ours over RMM). A row a binary
# cut off (RMM's pool under threads, at this budget) shows "-".
#
# Environment: RESOURCES (a regular expression: only the groups whose resource matches; default
# all), ROUNDS (4), BUDGET (alloc_bench's --budget-s, 0.4), STOP_S (no group starts after
# this many seconds; default 3000), RESULTS_DIR (default .bench/results): alternate.csv
# (round,binary,impl,resource,workload,param,value,unit), alternate.err and alternate.txt.
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
bins=("$@")
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "alternate: $b is not an executable" >&2; exit 2; }; done
dir=${RESULTS_DIR:-.bench/results}
mkdir -p "$dir"
csv=$dir/alternate.csv
: >"$csv"
: >"$dir/alternate.err"
rounds=${ROUNDS:-4} budget=${BUDGET:-0.4} stop=${STOP_S:-3000}
pin=()
if command -v taskset >/dev/null && taskset -c "${BENCH_CPU:-2}" true 2>/dev/null; then pin=(taskset -c "${BENCH_CPU:-2}"); fi
# resource|workloads|thread counts (empty: the one-thread workloads)
groups=("pool|fixed_trace,mixed_trace|" "pool|threads|8,16" "arena|fixed_trace,mixed_trace|" "arena|threads|8"
        "fixed_size|fixed_trace|" "fixed_size|threads|8" "binning|fixed_trace,mixed_trace|" "binning|threads|8"
        "statistics_pool|fixed_trace|" "tracking_pool|fixed_trace|" "limiting_pool|fixed_trace|"
        "stats_tracking_pool|fixed_trace|" "stats_tracking_pool|threads|8,16" "cuda_async|fixed_trace|")
n=${#bins[@]}
for r in $(seq 1 "$rounds"); do
  for g in "${groups[@]}"; do
    if [ "$SECONDS" -gt "$stop" ]; then echo "alternate: stopped in round $r after $SECONDS s" >&2; break 2; fi
    IFS='|' read -r resource workloads threads <<<"$g"
    [[ $resource =~ ${RESOURCES:-.} ]] || continue
    for i in $(seq 0 $((n - 1))); do
      b=${bins[$(((i + r - 1) % n))]}
      if [ -n "$threads" ]; then
        run=(timeout 120 "$b" --threads "$threads" --patterns own)
      else
        run=(timeout 120 "${pin[@]}" "$b")
      fi
      "${run[@]}" --budget-s "$budget" --only "$workloads" --resources "$resource" 2>>"$dir/alternate.err" |
        awk -F, -v r="$r" -v b="$(basename "$b")" '!/^#/ && NF == 6 && $5 ~ /^[0-9.eE+-]+$/ {print r "," b "," $0}' >>"$csv"
    done
  done
done
python3 - "$csv" "${bins[@]}" <<'EOF' | tee "$dir/alternate.txt"
import csv, statistics, sys
path, names = sys.argv[1], [b.rsplit("/", 1)[-1] for b in sys.argv[2:]]
rows = {}
for f in csv.reader(open(path)):
    rows.setdefault(tuple(f[3:6]), {}).setdefault(f[1], []).append(float(f[6]))
width = max(12, *(len(n) for n in names))
print("ns per operation (aggregate for threads), median of the rounds (n: rounds of the column compared)")
head = f"{'resource':20} {'workload':12} {'param':22} " + " ".join(f"{n:>{width}}" for n in names)
if len(names) >= 2:
    head += f" {'vs first':>8}" + (f" {'vs last':>8}" if len(names) >= 3 else "")
print(head + "  n")
for (res, w, param), by in sorted(rows.items()):
    med = [statistics.median(by[n]) if n in by else None for n in names]
    cells = " ".join(f"{m:>{width}.1f}" if m is not None else f"{'-':>{width}}" for m in med)
    line = f"{res:20} {w:12} {param.split(';')[0]:22} {cells}"
    if len(names) >= 2:
        mine = med[-2] if len(names) >= 3 else med[-1]
        first, last = med[0], med[-1]
        ratio = lambda a, b: f"{a / b:>8.3f}" if a is not None and b else f"{'-':>8}"
        line += f" {ratio(mine, first)}" + (f" {ratio(mine, last)}" if len(names) >= 3 else "")
    ours = names[-2] if len(names) >= 3 else names[-1]
    print(line + f"  {len(by.get(ours, []))}")
EOF
