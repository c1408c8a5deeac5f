#!/usr/bin/env bash
# On the GPU host (no network; Python 3.12 with torch, cupy, numba-cuda, cuda-bindings): our
# wheel and RMM 26.10's wheels installed into separate --target folders, our pytest suite, then
# every Python benchmark side by side. Everything it writes goes under $OUT.
#
#   bash benches/python/fetch.sh                       # first, on a machine with network
#   # copy .whl and .bench/py/wheels there (about 8 MiB), then on the GPU host:
#   OUT=/some/dir bash benches/python/gpu_run.sh [run.sh options: --budget S --steps N]
#
# $OUT receives env.txt (versions, GPU), pytest.log and pytest.xml (ours), and bench/ (run.sh's
# results.csv, table.txt, table.csv, table.png where matplotlib is installed, logs/).
# Environment: PYTHON (python3), PYTEST_ARGS (extra pytest options), SKIP_TESTS=1, SKIP_BENCH=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
OUT=${OUT:-$repo/.gpu/py}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
export PYTHON
export OURS_SITE=$repo/.bench/py/site-ours RMM_SITE=$repo/.bench/py/site-rmm
test_site=$repo/.bench/py/site-test
wheels=$repo/.bench/py/wheels
ls "$repo"/.whl/rmm_rs-*.whl >/dev/null 2>&1 || { echo "gpu_run.sh: no .whl/rmm_rs-*.whl (fetch.sh builds it)" >&2; exit 1; }
ls "$wheels"/rmm_cu13-*.whl >/dev/null 2>&1 || { echo "gpu_run.sh: no $wheels/rmm_cu13-*.whl (fetch.sh)" >&2; exit 1; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1
  "$PYTHON" --version 2>&1
  for m in numpy torch cupy numba_cuda cuda.bindings matplotlib pytest; do
    "$PYTHON" -c "import $m as x; print('$m', getattr(x, '__version__', '?'))" 2>/dev/null || echo "$m: not installed"
  done
  ls -l "$repo"/.whl/rmm_rs-*.whl "$wheels"/*.whl
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# Fresh installs: the wheels copied now, not those of an earlier run.
unpack() {  # unpack DIR WHEEL...: the wheels' files into DIR, afresh
  local dir=$1; shift
  rm -rf "$dir" && mkdir -p "$dir"
  # These wheels have no scripts and no .data: their files are what pip install --no-deps --target
  # would write, without pip's platform-tag check (our wheel is tagged for the glibc it was built on).
  for w in "$@"; do "$PYTHON" -m zipfile -e "$w" "$dir" || return 1; done
}
unpack "$OURS_SITE" "$repo"/.whl/rmm_rs-*.whl || exit 1
unpack "$RMM_SITE" "$wheels"/*.whl || exit 1
status=0

if [ -z "${SKIP_TESTS:-}" ]; then
  pypath=$OURS_SITE
  if ! "$PYTHON" -c 'import pytest' 2>/dev/null; then  # fetch.sh carries pytest's wheels for this
    unpack "$test_site" "$wheels"/test/*.whl || exit 1
    pypath=$OURS_SITE:$test_site
  fi
  # From python/tests, so that python/rmm (sources without _native) does not shadow the wheel.
  (cd python/tests && PYTHONPATH=$pypath "$PYTHON" -m pytest -q -rs ${PYTEST_ARGS:-} \
      --junitxml "$OUT/pytest.xml" 2>&1) | tee "$OUT/pytest.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  bash benches/python/run.sh --out "$OUT/bench" "$@" || status=1
fi
echo "gpu_run.sh: done (status $status); results in $OUT"
exit $status
