#!/usr/bin/env bash
# Runs the C++ oracle scenarios on both sides (built by tests/oracle/cpp/build.sh into .oracle/):
#   bash tests/oracle/cpp/run.sh OUTDIR
# writes OUTDIR/cpp-rmm.jsonl (RMM 26.10) and OUTDIR/cpp-ours.jsonl (rmm-rs), one JSON line per
# scenario, every scenario in each, run with one GPU visible (those needing 2 GPUs are "skipped"
# with a reason); with two or more GPUs also cpp-rmm-2gpu.jsonl and cpp-ours-2gpu.jsonl, the
# two-GPU scenarios (cpp/multi_gpu/) with every GPU visible; each run's stderr in
# OUTDIR/cpp-<side>[-2gpu].log. Without a GPU or without the binaries it prints
# why and exits 0.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BIN="${ORACLE_BIN_DIR:-$REPO/.oracle}"
OUTDIR="${1:?usage: run.sh OUTDIR}"
mkdir -p "$OUTDIR"

have=()
for side in rmm ours; do
  b="$BIN/oracle_cpp_$side"
  if [ ! -x "$b" ]; then
    echo "cpp oracle: skipped $side: $b missing (run tests/oracle/cpp/build.sh and copy .oracle/ here)"
    continue
  fi
  if ! n="$("$b" --probe 2>"$OUTDIR/cpp-$side.log")"; then
    echo "cpp oracle: skipped $side: $b does not start: $(tail -1 "$OUTDIR/cpp-$side.log")"
    continue
  fi
  if [ "$n" -lt 1 ] 2>/dev/null || [ -z "$n" ]; then
    echo "cpp oracle: skipped: no CUDA device"
    exit 0
  fi
  have+=("$side")
done
[ "${#have[@]}" -gt 0 ] || exit 0

# One GPU: every scenario with only the first GPU visible (those needing two are "skipped").
# Two or more: the scenarios that need two GPUs again, with every GPU visible, into *-2gpu.jsonl.
first_gpu=${CUDA_VISIBLE_DEVICES:-0}
first_gpu=${first_gpu%%,*}
run_side() {  # run_side SIDE SUFFIX FILTER VISIBLE
  local side=$1 suffix=$2 filter=$3 visible=$4 file="$OUTDIR/cpp-$1$2.jsonl" start rc
  echo "== cpp oracle ($side, GPUs $visible): $file"
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=$visible "$BIN/oracle_cpp_$side" ${filter:+--filter "$filter"} \
    > "$file" 2> "$OUTDIR/cpp-$side$suffix.log"
  rc=$?
  echo "   $(wc -l < "$file") scenarios, $(grep -c '"crash"' "$file") crashed, $(( $(date +%s) - start )) s, exit $rc"
}
all_gpus=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((n - 1)))}
for side in "${have[@]}"; do
  run_side "$side" "" "${ORACLE_FILTER:-}" "$first_gpu"
  if [ "$n" -ge 2 ]; then
    run_side "$side" -2gpu "${ORACLE_FILTER:-cpp/multi_gpu/}" "$all_gpus"
  fi
done
exit 0
