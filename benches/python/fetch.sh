#!/usr/bin/env bash
# Run on a machine with network (not the GPU host): downloads RMM 26.10's Python wheels for
# Python 3.12 manylinux x86_64 into .bench/py/wheels/ and builds our wheel into .whl/. Both folders
# are then copied to the GPU host, where benches/python/gpu_run.sh installs them.
#
#   bash benches/python/fetch.sh            # both
#   bash benches/python/fetch.sh --no-build # RMM's wheels only
#
# What `import rmm` of RMM 26.10 needs that the GPU host lacks (it has cuda-bindings 13.3.1,
# numpy, torch 2.11, cupy 14.2, numba-cuda): rmm-cu13 requires cuda-bindings>=13.0.1,<14,
# librmm-cu13==26.10.*, numpy>=2,<3; librmm-cu13 requires rapids-logger==0.3.*. cuda-python and
# cuda-core are only in rmm-cu13's "test" extra, so not fetched.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=yes
[ "${1:-}" = "--no-build" ] && build=no
dest=.bench/py/wheels
mkdir -p "$dest"
python=${PYTHON:-python3}
# --only-binary with an explicit platform and Python: the wheels the GPU host's Python 3.12
# installs, whatever Python runs this script.
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --implementation cp --abi cp312 --abi abi3 --abi none \
  -d "$dest" rmm-cu13==26.10.0 librmm-cu13==26.10.0 'rapids-logger==0.3.*'
# pytest and its dependencies, for a GPU host whose Python has no pytest (gpu_run.sh uses them
# only then).
"$python" -m pip download -q --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --implementation cp --abi cp312 --abi abi3 --abi none \
  -d "$dest/test" 'pytest==9.*'
ls -l "$dest" "$dest/test"
du -ch "$dest"/*.whl "$dest"/test/*.whl | tail -1
if [ "$build" = yes ]; then
  venv=${VENV_PY:-.venv-py}
  [ -x "$venv/bin/maturin" ] || make python-venv VENV_PY="$venv"
  rm -f .whl/rmm_rs-*.whl
  (cd python && "../$venv/bin/maturin" build --release -o ../.whl)
  ls -l .whl/rmm_rs-*.whl
fi
