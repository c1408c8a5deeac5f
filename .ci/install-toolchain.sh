#!/usr/bin/env bash
# Installs what building the C++ side needs on a machine with no CUDA: nvcc 13.0.88 with its crt,
# nvvm and runtime pinned to match (the GPU machine's compiler), CCCL 3.5.0 (what RMM 26.10 uses)
# and CMake (for .ci/cmake_consumer.sh), all from PyPI into .venv-cuda, and GoogleTest and valgrind
# from Debian. Idempotent. `make` runs it by itself when it finds no nvcc 13.x or no CCCL 3.5.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-cuda
die() { echo "install-toolchain: $*" >&2; exit 1; }
# The wheels land in the venv's site-packages, whose path carries the venv's Python version.
cuda_home() {
  "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/nvidia/cu13")'
}
pip_install() {
  "$venv/bin/pip" install -q --disable-pip-version-check "$@" \
    || die "pip install $* failed (output above); is PyPI reachable?"
}

if [ ! -x "$venv/bin/pip" ]; then
  command -v python3 >/dev/null || die "python3 is needed to install the CUDA toolchain from PyPI"
  python3 -m venv "$venv" || die "python3 -m venv $venv failed (Debian: apt-get install python3-venv)"
fi
# The five pins together: nvcc 13.0.88 alone would pull crt, nvvm and runtime 13.5 (a mixed
# toolkit), and 13.0.88 matches the GPU machine's nvcc.
if [ ! -x "$(cuda_home)/bin/nvcc" ]; then
  echo "install-toolchain: nvcc 13.0.88 and CCCL 3.5 from PyPI into $venv"
  pip_install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.3.5.0.6
fi
if [ ! -x "$venv/bin/cmake" ]; then
  echo "install-toolchain: CMake from PyPI into $venv"
  pip_install cmake==3.31.10
fi

# Debian packages, as root or through sudo without a password. Not fatal: `make example` needs
# neither (make test needs GoogleTest, make valgrind valgrind), so say what is missing and go on.
apt_install() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      echo "install-toolchain: warning: not root: install $* yourself" >&2; return 0; fi
  fi
  if ! command -v apt-get >/dev/null; then
    echo "install-toolchain: warning: no apt-get: install $* yourself" >&2; return 0
  fi
  if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }; then
    echo "install-toolchain: warning: apt-get install $* failed: install it yourself" >&2
  fi
}
if [ ! -e /usr/lib/x86_64-linux-gnu/libgtest.a ] && [ ! -e /usr/src/googletest/googletest/src/gtest-all.cc ]; then
  apt_install libgtest-dev
fi
# valgrind: .ci/valgrind.sh runs every host test binary under memcheck.
if ! command -v valgrind >/dev/null; then
  apt_install valgrind
fi
