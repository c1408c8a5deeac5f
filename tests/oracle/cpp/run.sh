#!/usr/bin/env bash
# Runs the C++ oracle scenarios on both sides (built by tests/oracle/cpp/build.sh into .oracle/):
#   bash tests/oracle/cpp/run.sh OUTDIR
# writes OUTDIR/cpp-rmm.jsonl (RMM 26.10) and OUTDIR/cpp-ours.jsonl (rmm-rs), one JSON line per
# scenario, every scenario in each (those needing 2 GPUs are "skipped" with a reason on one GPU),
# and each side's stderr in OUTDIR/cpp-<side>.log. Without a GPU or without the binaries it prints
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
    echo "cpp oracle: skipped $side: $b missing (run tests/oracle/cpp/build.sh and carry .oracle/)"
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

for side in "${have[@]}"; do
  echo "== cpp oracle ($side, $n GPUs): $OUTDIR/cpp-$side.jsonl"
  start=$(date +%s)
  "$BIN/oracle_cpp_$side" ${ORACLE_FILTER:+--filter "$ORACLE_FILTER"} \
    > "$OUTDIR/cpp-$side.jsonl" 2> "$OUTDIR/cpp-$side.log"
  rc=$?
  echo "   $(wc -l < "$OUTDIR/cpp-$side.jsonl") scenarios, $(grep -c '"crash"' "$OUTDIR/cpp-$side.jsonl") crashed, $(( $(date +%s) - start )) s, exit $rc"
done
exit 0
