#!/usr/bin/env bash
# CI for the C++ face: installs the pinned CUDA toolchain from PyPI (if missing) and GoogleTest,
# builds the Rust staticlib, compiles and links every example and C++ test, checks that every
# public header compiles with -std=c++17 and -std=c++20, and runs the binaries. Without a GPU the
# GPU parts print "skipped: no CUDA device" and succeed; the host-only bridge tests always run.
#
# Environment: CARGO_TARGET_DIR (default ./target), RMM_CUDA_VENV (default ./.venv-cuda),
# JOBS (default: number of CPUs), RMM_CPP20=0 to skip the second build with -std=c++20.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
venv=${RMM_CUDA_VENV:-$repo/.venv-cuda}
jobs=${JOBS:-$(nproc)}

# The five pins together: nvcc 13.0.88 alone would pull crt, nvvm and runtime 13.5 (a mixed
# toolkit), and 13.0.88 matches the GPU host's nvcc.
cuda_home() { "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/nvidia/cu13")'; }
if [ ! -x "$venv/bin/python" ] || [ ! -x "$(cuda_home)/bin/nvcc" ]; then
  echo "== installing the CUDA toolchain into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.3.5.0.6
fi
export CUDA_HOME
CUDA_HOME=$(cuda_home)

if [ ! -f /usr/include/gtest/gtest.h ]; then
  echo "== installing libgtest-dev"
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq libgtest-dev; else
    sudo apt-get update -qq && sudo apt-get install -y -qq libgtest-dev; fi
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
echo "== nvcc: $("$CUDA_HOME/bin/nvcc" --version | tail -1)"
echo "== building (staticlib, examples, tests) with $jobs jobs"
make -j"$jobs" all
echo "== public headers with -std=c++17 and -std=c++20"
make std-check
echo "== running"
make run
if [ "${RMM_CPP20:-1}" != 0 ]; then
  echo "== the examples and tests again with -std=c++20"
  make -j"$jobs" CXX_STD=20 BUILD="$repo/build/cpp20" all
  make CXX_STD=20 BUILD="$repo/build/cpp20" run
fi
echo "== C++ face: OK"
