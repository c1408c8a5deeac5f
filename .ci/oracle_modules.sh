#!/usr/bin/env bash
# RMM 26.10's Python modules against ours, without a GPU: every module-level name, re-export,
# signature and class member of RMM's wheel (from PyPI) must be found in our wheel, and nothing
# more than the additions tests/oracle/python/scenarios/modules.py lists. Runs the oracle's
# modules/* scenarios on both sides and compares them (tests/oracle/compare.py).
#
#   bash .ci/oracle_modules.sh     # after make python (.whl/rmm_rs-*.whl)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PYTHON3=${PYTHON3:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ls .whl/rmm_rs-*.whl >/dev/null 2>&1 || { echo "oracle_modules: no .whl/rmm_rs-*.whl: run make python first" >&2; exit 1; }
"$PYTHON3" -m venv "$work/venv"
# RMM's own wheels, and what importing rmm needs (numpy, cuda-bindings: no GPU, no toolkit).
"$work/venv/bin/pip" install -q --disable-pip-version-check numpy 'cuda-bindings>=13.0.1,<14'
"$work/venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$work/wheels" \
  rmm-cu13==26.10.0 librmm-cu13==26.10.0 rapids-logger==0.3.0
for w in "$work"/wheels/*.whl; do "$work/venv/bin/python" -m zipfile -e "$w" "$work/site-rmm"; done
"$work/venv/bin/python" -m zipfile -e "$(ls .whl/rmm_rs-*.whl | head -1)" "$work/site-ours"
for side in rmm ours; do
  PYTHONPATH=$work/site-$side ORACLE_GPUS=0 "$work/venv/bin/python" tests/oracle/python/runner.py \
    --impl "$side" --out "$work/$side.jsonl" --only 'modules/*' | tail -1 | tee "$work/$side.line"
  # A side that could not import rmm skips every scenario, and skipped scenarios compare as
  # nothing: that must fail, not pass.
  if grep -q ' 0 ran' "$work/$side.line"; then echo "oracle_modules: the $side side ran nothing" >&2; exit 1; fi
done
"$PYTHON3" "$repo/tests/oracle/compare.py" --name python-modules "$work/rmm.jsonl" "$work/ours.jsonl"
