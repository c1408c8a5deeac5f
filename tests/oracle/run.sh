#!/usr/bin/env bash
# The oracle, one command: RMM 26.10 and rmm-rs run the same scenarios; every divergence is printed.
#
#   OUT=/some/dir bash tests/oracle/run.sh [runner options, e.g. --only 'buffers/*']
#
# Needs (copied to the GPU host): .whl/rmm_rs-*.whl (make python) and .bench/py/wheels
# (rmm_cu13, librmm_cu13, rapids_logger: benches/python/fetch.sh), Python 3.11+ with numpy and
# cuda-bindings (torch, cupy, numba-cuda where present: their scenarios skip otherwise).
#
# Each wheel is unpacked into its own site folder (ORACLE_SITES, default /tmp/oracle-sites), then:
#   Python, 1 GPU:   $OUT/py-rmm.jsonl, $OUT/py-ours.jsonl           -> oracle python-1gpu
#   Python, 2 GPUs:  $OUT/py-rmm-2gpu.jsonl, $OUT/py-ours-2gpu.jsonl -> oracle python-2gpu
#   C++ (tests/oracle/cpp/run.sh OUT, where present): cpp-{rmm,ours}[-2gpu].jsonl
#                                                                    -> oracle cpp-1gpu, cpp-2gpu
# The summaries are printed last and written to $OUT/summary.txt. Without a GPU it prints why and
# exits 0 (CI may call it); without RMM's wheels it runs our side only and says so.
# Exit status: 1 where any pair diverges or our wheel is missing, else 0.
# Environment: PYTHON (python3), OUT (/tmp/oracle), ORACLE_SITES, ORACLE_GPUS (replaces the GPU
# count found).
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
OUT=${OUT:-/tmp/oracle}
PYTHON=${PYTHON:-python3}
SITES=${ORACLE_SITES:-/tmp/oracle-sites}
mkdir -p "$OUT"
: >"$OUT/summary.txt"
runner=$repo/tests/oracle/python/runner.py
compare=$repo/tests/oracle/compare.py

if [ -n "${ORACLE_GPUS:-}" ]; then
  gpus=$ORACLE_GPUS
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "${gpus:-0}" -eq 0 ]; then
  echo "oracle: skipped: no GPU (nvidia-smi lists none)" | tee -a "$OUT/summary.txt"
  exit 0
fi
echo "oracle: $gpus GPU(s); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

unpack() {  # unpack DIR WHEEL...: the wheels' files into DIR, afresh (as pip --target would)
  local dir=$1; shift
  rm -rf "$dir" && mkdir -p "$dir"
  for w in "$@"; do "$PYTHON" -m zipfile -e "$w" "$dir" || return 1; done
}

status=0
ours_site=$SITES/ours rmm_site=$SITES/rmm
have_ours=1 have_rmm=1
if ls "$repo"/.whl/rmm_rs-*.whl >/dev/null 2>&1; then
  unpack "$ours_site" "$repo"/.whl/rmm_rs-*.whl || have_ours=0
else
  echo "oracle: our side skipped: no .whl/rmm_rs-*.whl (make python builds it)" | tee -a "$OUT/summary.txt"
  have_ours=0 status=1
fi
wheels=$repo/.bench/py/wheels
if ls "$wheels"/rmm_cu13-*.whl "$wheels"/librmm_cu13-*.whl "$wheels"/rapids_logger-*.whl >/dev/null 2>&1; then
  unpack "$rmm_site" "$wheels"/rmm_cu13-*.whl "$wheels"/librmm_cu13-*.whl "$wheels"/rapids_logger-*.whl || have_rmm=0
else
  echo "oracle: RMM's side skipped: no rmm_cu13/librmm_cu13/rapids_logger wheels in .bench/py/wheels (benches/python/fetch.sh)" | tee -a "$OUT/summary.txt"
  have_rmm=0
fi

run_py() {  # run_py IMPL SITE FILE [runner options]
  local impl=$1 site=$2 file=$3; shift 3
  (cd "$OUT" && PYTHONPATH=$site "$PYTHON" "$runner" --impl "$impl" --out "$file" "$@") || status=1
}
pairs=()
for impl in rmm ours; do
  [ "$impl" = rmm ] && { [ $have_rmm = 1 ] || continue; site=$rmm_site; }
  [ "$impl" = ours ] && { [ $have_ours = 1 ] || continue; site=$ours_site; }
  run_py "$impl" "$site" "$OUT/py-$impl.jsonl" --gpus 1 "$@"
  if [ "$gpus" -ge 2 ]; then
    run_py "$impl" "$site" "$OUT/py-$impl-2gpu.jsonl" --gpus 2 --min-gpus 2 "$@"
  fi
done
pairs+=("python-1gpu:py-rmm.jsonl:py-ours.jsonl")
[ "$gpus" -ge 2 ] && pairs+=("python-2gpu:py-rmm-2gpu.jsonl:py-ours-2gpu.jsonl")

if [ -f tests/oracle/cpp/run.sh ]; then
  OURS_SITE=$ours_site RMM_SITE=$rmm_site bash tests/oracle/cpp/run.sh "$OUT" || status=1
  pairs+=("cpp-1gpu:cpp-rmm.jsonl:cpp-ours.jsonl")
  [ "$gpus" -ge 2 ] && pairs+=("cpp-2gpu:cpp-rmm-2gpu.jsonl:cpp-ours-2gpu.jsonl")
else
  echo "oracle: C++ side skipped: no tests/oracle/cpp/run.sh" | tee -a "$OUT/summary.txt"
fi

for pair in "${pairs[@]}"; do
  IFS=: read -r name a b <<<"$pair"
  if [ ! -f "$OUT/$a" ] || [ ! -f "$OUT/$b" ]; then
    echo "oracle $name: not compared: missing $( [ -f "$OUT/$a" ] || echo "$a " )$( [ -f "$OUT/$b" ] || echo "$b")" | tee -a "$OUT/summary.txt"
    continue
  fi
  "$PYTHON" "$compare" "$OUT/$a" "$OUT/$b" --name "$name" --per-scenario 5 >"$OUT/$name.diff.txt"
  rc=$?
  [ $rc -eq 0 ] || status=1
  tail -n 1 "$OUT/$name.diff.txt" >>"$OUT/summary.txt"
  echo "--- $name: divergences in $OUT/$name.diff.txt"
  head -n 200 "$OUT/$name.diff.txt"
done
echo "=== oracle summary"
cat "$OUT/summary.txt"
exit $status
