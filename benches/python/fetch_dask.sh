#!/usr/bin/env bash
# Dask, distributed, Dask-CUDA 26.10 and the pure-Python (or small binary) packages they import,
# as CPython 3.12 x86_64 wheels, for a GPU host that has numpy, cupy, torch and numba-cuda (and
# through numba-cuda cuda-bindings/cuda-core) but no network.
#
#   benches/python/fetch_dask.sh                 # here: download into .bench/py/dask-wheels/, print the size
#   benches/python/fetch_dask.sh install DIR     # there: install into DIR every wheel whose
#                                                # distribution the running python lacks
#
# dask/distributed are pinned to 2026.7.1, the versions rapids-dask-dependency 26.10 (Dask-CUDA
# 26.10's pin) requires. Everything is installed with --no-deps: the list below is the closure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${DASK_WHEELS:-$root/.bench/py/dask-wheels}
python=${PYTHON:-python3}

pkgs=(
  dask==2026.7.1 distributed==2026.7.1 dask-cuda==26.10.0
  click cloudpickle fsspec partd locket pyyaml toolz jinja2 markupsafe msgpack psutil
  sortedcontainers tblib tornado zict packaging
  pandas python-dateutil six tzdata nvidia-ml-py
  'cuda-core>=0.5.1,<2' cuda-pathfinder
)

if [[ ${1:-} == install ]]; then
  target=${2:?usage: fetch_dask.sh install DIR}
  missing=()
  for whl in "$dest"/*.whl; do
    name=$(basename "$whl" | cut -d- -f1)
    if ! "$python" -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$name" 2>/dev/null; then
      missing+=("$whl")
    fi
  done
  if ((${#missing[@]})); then
    "$python" -m pip install -q --no-deps --no-index --target "$target" "${missing[@]}"
  fi
  echo "installed into $target: ${missing[*]##*/}"
  exit 0
fi

mkdir -p "$dest"
"$python" -m pip download -q --no-deps --dest "$dest" --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  "${pkgs[@]}"
# An earlier run may have left other versions of the pinned three.
find "$dest" -name 'dask-2*.whl' ! -name 'dask-2026.7.1-*' -delete
find "$dest" -name 'distributed-*.whl' ! -name 'distributed-2026.7.1-*' -delete
ls -1 "$dest"
total=$(du -cb "$dest"/*.whl | tail -1 | cut -f1)
echo "total: $((total / 1024)) KiB in $(ls "$dest"/*.whl | wc -l) wheels"
