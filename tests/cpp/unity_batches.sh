#!/usr/bin/env bash
# Writes the C++ test sources as batches of one translation unit each, DIR/batch_N.cu including
# SIZE sources (in the order given), and prints the batch files. A batch file is rewritten only
# when its text changes, so make rebuilds only the batches whose sources changed (through the
# dependency files nvcc writes). Every nvcc run parses CCCL anew, which costs more than most
# test sources: a batch of them parses it once. Test sources keep their file-local names unique
# (one anonymous namespace per batch); shared helpers live in test_utils.hpp.
#
#   tests/cpp/unity_batches.sh DIR SIZE SOURCE...
set -euo pipefail
dir=$1 size=$2
shift 2
[ "$size" -ge 1 ] || { echo "unity_batches.sh: SIZE must be at least 1" >&2; exit 2; }
mkdir -p "$dir"
n=0
while [ $# -gt 0 ]; do
  n=$((n + 1))
  text=
  for _ in $(seq "$size"); do
    [ $# -gt 0 ] || break
    text+="#include \"$1\""$'\n'
    shift
  done
  out=$dir/batch_$n.cu
  if [ ! -f "$out" ] || [ "$(cat "$out")"$'\n' != "$text" ]; then printf '%s' "$text" > "$out"; fi
  echo "$out"
done
# Batches left from a longer list would still be built by nothing, but confuse a reader.
for stale in "$dir"/batch_*.cu; do
  [ -e "$stale" ] || continue
  i=${stale##*/batch_}; i=${i%.cu}
  [ "$i" -le "$n" ] || rm -f "$stale" "${stale%.cu}.o" "${stale%.cu}.d"
done
