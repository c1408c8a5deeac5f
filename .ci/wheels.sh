#!/usr/bin/env bash
# The wheels a user installs (make wheels: dist/rmm_rs_cu<major>-*.whl), each into a fresh venv
# from the wheel folder as a user does (pip fetches numpy), then, from outside the repository:
# `import rmm`, the stubs against the extension (mypy.stubtest) and mypy --strict on the typing
# smoke script (python/tests/typing/smoke.py). No CUDA toolkit and no GPU needed.
#
#   bash .ci/wheels.sh                          # CUDA 13
#   WHEEL_CUDA_MAJORS="12 13" bash .ci/wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
PYTHON3=${PYTHON3:-python3}
MYPY_VERSION=$(sed -n 's/^MYPY_VERSION *?= *//p' Makefile)
# Every module with a stub (python/rmm/**/*.pyi), as stubtest names them.
STUBBED=$(cd python && find rmm -name '*.pyi' | sed 's/\.pyi$//; s#/#.#g' | sort)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for major in ${WHEEL_CUDA_MAJORS:-13}; do
    make --no-print-directory wheels CUDA_MAJOR="$major"
    wheel=$(ls dist/rmm_rs_cu"$major"-*.whl)
    rm -rf "$work/venv"
    "$PYTHON3" -m venv "$work/venv"
    "$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel" "mypy==$MYPY_VERSION"
    cp python/tests/typing/smoke.py python/tests/typing/mypy.ini python/tests/typing/stubtest_allowlist.txt "$work/"
    (
        cd "$work"
        venv/bin/python - "rmm-rs-cu$major" <<'PY'
import importlib.metadata
import sys

import rmm

print(f"wheels: {sys.argv[1]} {importlib.metadata.version(sys.argv[1])} imports rmm {rmm.__version__}")
PY
        # shellcheck disable=SC2086 # STUBBED is a list of module names
        venv/bin/python -m mypy.stubtest --mypy-config-file mypy.ini --allowlist stubtest_allowlist.txt $STUBBED
        venv/bin/python -m mypy --strict smoke.py
    )
    echo "wheels: ok: $(basename "$wheel")"
done
