#!/usr/bin/env bash
# Installs what building the C++ side needs on a machine with no CUDA: nvcc 13.0.88 with its crt,
# nvvm and runtime pinned to match (the GPU machine's compiler), CCCL 3.5.0 (what RMM 26.10 uses),
# all from PyPI into .venv-cuda, and GoogleTest and valgrind from Debian. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-cuda/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc ]; then
  python3 -m venv .venv-cuda
  .venv-cuda/bin/pip install -q --disable-pip-version-check \
    nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.3.5.0.6
fi
if [ ! -e /usr/lib/x86_64-linux-gnu/libgtest.a ] && [ ! -e /usr/src/googletest/googletest/src/gtest-all.cc ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq libgtest-dev >/dev/null
fi
# valgrind: .ci/valgrind.sh runs every host test binary under memcheck.
if ! command -v valgrind >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq valgrind >/dev/null
fi
