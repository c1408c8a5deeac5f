#!/usr/bin/env bash
# Every Python benchmark, for our package and for RMM 26.10's, into one CSV, then the side-by-side
# table (table.py) and a plot where matplotlib is installed. Needs a GPU, torch and cupy.
#
#   bash benches/python/run.sh [--budget SECONDS] [--steps N] [--out DIR] [--scripts a.py,b.py]
#
# --scripts runs only the scripts named (default: every one), e.g. --scripts cupy_bench.py.
#
# Which `rmm` a script imports is chosen by PYTHONPATH: OURS_SITE holds our wheel (.whl/rmm_rs-*.whl)
# and RMM_SITE RMM 26.10's (.bench/py/wheels/*.whl, from fetch.sh), each
# unpacked (what `pip install --no-deps --target` writes) when the folder is missing.
# The baselines that use no rmm (PyTorch's caching allocator, CuPy's two pools) run once.
# Environment: PYTHON (python3), OURS_SITE (.bench/py/site-ours), RMM_SITE (.bench/py/site-rmm),
# CASE_TIMEOUT (seconds per script run, 900).
# Output in DIR (default .bench/py/results): results.csv (every row), table.txt, table.csv,
# table.png, and each script's stderr in logs/.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
budget=20 steps=300 out=.bench/py/results scripts=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --scripts) scripts=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PYTHON=${PYTHON:-python3}
OURS_SITE=${OURS_SITE:-$repo/.bench/py/site-ours}
RMM_SITE=${RMM_SITE:-$repo/.bench/py/site-rmm}
CASE_TIMEOUT=${CASE_TIMEOUT:-900}
mkdir -p "$out/logs"
csv=$out/results.csv

# install_wheels DIR WHEEL...: the wheels into DIR, without their dependencies.
install_wheels() {
  local dir=$1; shift
  [ $# -gt 0 ] && [ -e "$1" ] || { echo "run.sh: no wheel for $dir (fetch.sh makes them)" >&2; return 1; }
  mkdir -p "$dir"
  # These wheels have no scripts and no .data: their files are what pip install --no-deps --target
  # would write, without pip's platform-tag check (our wheel is tagged for the glibc it was built on).
  for w in "$@"; do "$PYTHON" -m zipfile -e "$w" "$dir" || return 1; done
}
[ -d "$OURS_SITE/rmm" ] || install_wheels "$OURS_SITE" "$repo"/.whl/rmm_rs-*.whl || exit 1
[ -d "$RMM_SITE/rmm" ] || install_wheels "$RMM_SITE" "$repo"/.bench/py/wheels/*.whl || exit 1

status=0
# bench SITE NAME SCRIPT ARGS...: one script's rows appended to the CSV, its stderr to logs/.
bench() {
  local site=$1 name=$2 script=$3; shift 3
  [ -z "$scripts" ] || [[ ",$scripts," == *",$script,"* ]] || return 0
  echo "== $name: $script $*" >&2
  PYTHONPATH=$site timeout "$CASE_TIMEOUT" "$PYTHON" "benches/python/$script" --impl-name "$name" \
    --budget "$budget" --no-header "$@" >>"$csv" 2>>"$out/logs/$name-${script%.py}.log" || {
    echo "   failed (exit $?): see $out/logs/$name-${script%.py}.log" >&2; status=1; }
}
{
  echo "# python benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget}s per script, $steps steps"
  echo "# $("$PYTHON" --version 2>&1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "impl,workload,param,value,unit"
} >"$csv"
bench "$OURS_SITE" rmm-rs torch_bench.py --steps "$steps" --modes native,rmm_pool
bench "$RMM_SITE" rmm-26.10 torch_bench.py --steps "$steps" --modes rmm_pool
bench "$OURS_SITE" rmm-rs cupy_bench.py
bench "$RMM_SITE" rmm-26.10 cupy_bench.py --modes rmm_pool,rmm_stack
bench "$OURS_SITE" rmm-rs device_buffer_bench.py
bench "$RMM_SITE" rmm-26.10 device_buffer_bench.py

"$PYTHON" benches/python/table.py "$csv" --csv "$out/table.csv" --plot "$out/table.png" | tee "$out/table.txt"
exit $status
