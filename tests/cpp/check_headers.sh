#!/usr/bin/env bash
# Checks that every header path of RMM 26.10 (tests/cpp/rmm_26_10_headers.txt) exists under
# include/ and compiles alone with nvcc at -std=c++17, and with the host compiler at -std=c++20
# where RMM's own header compiles with one ('host' in the list); then all of them in one
# translation unit with nvcc at -std=c++20. One translation unit per header, run in parallel.
# Alone, nvcc runs its front ends and the device compiler (-cuda: no host object); the one
# translation unit of every header goes through the host compiler as well. Each run parses CCCL
# anew (seconds of CPU), so a header is parsed alone once per compiler, not once per standard.
#
#   tests/cpp/check_headers.sh [--list FILE] [--jobs N]
#
# Environment: NVCC, CXX (default g++), INCLUDES (the -I flags, CCCL first), ARCH (sm_90),
# CUDA_INCLUDE (the toolkit's include directory, for the host compiler), WORK (scratch folder).
# Exits 1 listing every missing path and every failed compilation (first error lines shown).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
list=$repo/tests/cpp/rmm_26_10_headers.txt
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --list) list=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: $0 [--list FILE] [--jobs N]" >&2; exit 2 ;;
  esac
done
: "${NVCC:?set NVCC (make header-check sets it)}"
: "${INCLUDES:?set INCLUDES (make header-check sets it)}"
CXX=${CXX:-g++}
ARCH=${ARCH:-sm_90}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"

missing=()
all_includes=
jobs_file=$WORK/jobs.txt
: > "$jobs_file"
total=0
while read -r path kind _; do
  case $path in ''|'#'*) continue ;; esac
  total=$((total + 1))
  if [ ! -f "$repo/include/$path" ]; then
    missing+=("$path")
    continue
  fi
  tu=$WORK/$(echo "$path" | tr '/.' '__').cu
  printf '#include <%s>\n#include <%s>\nint main() { return 0; }\n' "$path" "$path" > "$tu"
  echo "nvcc 17 $path $tu" >> "$jobs_file"
  [ "$kind" = host ] && echo "host 20 $path $tu" >> "$jobs_file"
  all_includes+="#include <$path>"$'\n'
done < "$list"
all_tu=$WORK/all_rmm_26_10_headers.cu
printf '%sint main() { return 0; }\n' "$all_includes" > "$all_tu"
echo "nvcc-object 20 all-RMM-26.10-headers $all_tu" >> "$jobs_file"

# One compilation: prints "FAIL <what>" and the first error lines, or nothing.
compile() {
  local tool=$1 std=$2 path=$3 tu=$4 log
  log=$(mktemp "$WORK/log.XXXXXX")
  if [ "$tool" = nvcc ]; then
    # shellcheck disable=SC2086
    "$NVCC" -std=c++$std -arch=$ARCH $INCLUDES -cuda "$tu" -o /dev/null > "$log" 2>&1 || { echo "FAIL nvcc -std=c++$std $path"; grep -m5 -i 'error' "$log" | sed 's/^/    /'; }
  elif [ "$tool" = nvcc-object ]; then
    # shellcheck disable=SC2086
    "$NVCC" -std=c++$std -arch=$ARCH $INCLUDES -c "$tu" -o /dev/null > "$log" 2>&1 || { echo "FAIL nvcc -std=c++$std $path"; grep -m5 -i 'error' "$log" | sed 's/^/    /'; }
  else
    # shellcheck disable=SC2086
    "$CXX" -std=c++$std $INCLUDES ${CUDA_INCLUDE:+-I$CUDA_INCLUDE} -fsyntax-only -x c++ "$tu" > "$log" 2>&1 || { echo "FAIL $CXX -std=c++$std $path"; grep -m5 -i 'error' "$log" | sed 's/^/    /'; }
  fi
  rm -f "$log"
}
export -f compile
export NVCC CXX ARCH INCLUDES CUDA_INCLUDE WORK

failures=$(xargs -P "$jobs" -L 1 bash -c 'compile "$@"' _ < "$jobs_file" || true)
ran=$(wc -l < "$jobs_file")

status=0
for p in "${missing[@]+"${missing[@]}"}"; do
  echo "MISSING include/$p"
  status=1
done
if [ -n "$failures" ]; then
  echo "$failures"
  status=1
fi
nfail=$(printf '%s\n' "$failures" | grep -c '^FAIL' || true)
echo "header-check: $total RMM 26.10 paths, ${#missing[@]} missing, $ran compilations, $nfail failed"
exit $status
