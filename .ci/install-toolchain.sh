#!/usr/bin/env bash
# Installs what building the C++ side needs on a machine with no CUDA, into a venv of its own:
#
#   CUDA_MAJOR=13 (the default): nvcc 13.0.88 with its crt, nvvm and runtime pinned to match (the
#     compiler of the GPU hosts in docs/benchmarks/), from PyPI into .venv-cuda (toolkit root: its nvidia/cu13);
#   CUDA_MAJOR=12: CUDA 12.4 into .venv-cuda12 (toolkit root: .venv-cuda12/cuda12). PyPI has no
#     nvcc 12 driver (its CUDA 12 nvcc wheels hold ptxas and libdevice only) and no static cudart
#     before 12.9, so nvcc, cudafe++, cicc, fatbinary and nvlink 12.4.131 come from Debian's
#     nvidia-cuda-toolkit package and the static cudart and cudadevrt 12.4 from nvidia-cuda-dev
#     (trixie, non-free: downloaded with apt-get into a private list, unpacked, never installed;
#     about 1 GB to download, a minute or two to unpack), the CUDA headers, crt, ptxas and
#     libdevice 12.4 from PyPI;
#
# and in both CCCL 3.5.0 (what RMM 26.10 uses; it supports CUDA 12 and 13) and CMake (for
# .ci/cmake_consumer.sh) from PyPI, and GoogleTest and valgrind from Debian. Idempotent.
#
#   bash .ci/install-toolchain.sh [PART...]     # default: cuda cmake gtest valgrind (CI)
#
#   cuda      nvcc of CUDA_MAJOR and CCCL 3.5, into the venv above
#   cccl      CCCL 3.5 alone (the nvidia-cuda-cccl wheel), into the venv above: for a toolkit of
#             one's own whose CCCL is older
#   cmake     CMake from PyPI, into the venv above
#   gtest     GoogleTest (Debian's libgtest-dev), as root or through sudo -n
#   valgrind  valgrind (Debian's), as root or through sudo -n
#
# `make` runs it with `cuda` or `cccl` only (into the repository's venv, nothing outside it) where
# tools/cuda_toolchain.sh finds no usable nvcc or no CCCL 3.5; `make test` with `gtest` where no
# GoogleTest is found, after saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=" ${*:-cuda cmake gtest valgrind} "
for p in $parts; do
  case $p in cuda|cccl|cmake|gtest|valgrind) ;; *) echo "install-toolchain: unknown part $p" >&2; exit 2 ;; esac
done
want() { [[ $parts == *" $1 "* ]]; }
major=${CUDA_MAJOR:-13}
case $major in
  13) venv=.venv-cuda ;;
  12) venv=.venv-cuda12 ;;
  *) echo "install-toolchain: CUDA_MAJOR must be 12 or 13, not $major" >&2; exit 2 ;;
esac
die() { echo "install-toolchain: $*" >&2; exit 1; }
# The wheels land in the venv's site-packages, whose path carries the venv's Python version.
site() {
  "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}
cuda_home() {
  if [ "$major" = 13 ]; then echo "$(site)/nvidia/cu13"; else echo "$PWD/$venv/cuda12"; fi
}
pip_install() {
  "$venv/bin/pip" install -q --disable-pip-version-check "$@" \
    || die "pip install $* failed (output above); is PyPI reachable?"
}

if { want cuda || want cccl || want cmake; } && [ ! -x "$venv/bin/pip" ]; then
  command -v python3 >/dev/null || die "python3 is needed to install the CUDA toolchain from PyPI"
  python3 -m venv "$venv" || die "python3 -m venv $venv failed (Debian: apt-get install python3-venv)"
fi
# The five pins together: nvcc 13.0.88 alone would pull crt, nvvm and runtime 13.5 (a mixed
# toolkit), and 13.0.88 matches the nvcc of the GPU hosts in docs/benchmarks/.
if want cccl && ! want cuda && [ ! -f "$(site)/nvidia/cu13/include/cccl/cuda/std/__cccl/version.h" ]; then
  echo "install-toolchain: CCCL 3.5 (nvidia-cuda-cccl 13.3.5.0.6) from PyPI into $venv"
  pip_install nvidia-cuda-cccl==13.3.5.0.6
fi
if want cuda && [ "$major" = 13 ] && [ ! -x "$(cuda_home)/bin/nvcc" ]; then
  echo "install-toolchain: nvcc 13.0.88 and CCCL 3.5 from PyPI into $venv"
  pip_install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.3.5.0.6
fi
if want cuda && [ "$major" = 12 ] && [ ! -x "$(cuda_home)/bin/nvcc" ]; then
  echo "install-toolchain: CUDA 12.4 (Debian's nvcc and static cudart, PyPI's headers) and CCCL 3.5 into $venv"
  pip_install nvidia-cuda-nvcc-cu12==12.4.131 nvidia-cuda-runtime-cu12==12.4.127 nvidia-cuda-cccl==13.3.5.0.6
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
    || die "CUDA 12 needs apt-get and dpkg-deb (Debian's nvidia-cuda-toolkit holds nvcc 12)"
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free" >"$work/sources.list"
  apt_opts=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
            -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update -qq || die "apt-get update of Debian trixie non-free failed"
  (cd "$work" && apt-get "${apt_opts[@]}" download -qq nvidia-cuda-toolkit=12.4.131~12.4.1-2) \
    || die "apt-get download nvidia-cuda-toolkit=12.4.131~12.4.1-2 failed"
  dpkg-deb -x "$work"/nvidia-cuda-toolkit_*.deb "$work/deb"
  (cd "$work" && apt-get "${apt_opts[@]}" download -qq nvidia-cuda-dev=12.4.127~12.4.1-2) \
    || die "apt-get download nvidia-cuda-dev=12.4.127~12.4.1-2 failed"
  lib=./usr/lib/x86_64-linux-gnu
  mkdir -p "$work/dev"
  dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb | tar -x -C "$work/dev" "$lib/libcudart_static.a" "$lib/libcudadevrt.a" \
    || die "unpacking the static cudart from nvidia-cuda-dev failed"
  root=$(cuda_home) nv=$(site)/nvidia
  rm -rf "$root" && mkdir -p "$root/bin/crt" "$root/nvvm/bin" "$root/include" "$root/lib"
  for tool in cudafe++ fatbinary nvlink bin2c; do cp "$work/deb/usr/bin/$tool" "$root/bin/"; done
  cp "$work"/deb/usr/lib/nvidia-cuda-toolkit/bin/crt/*.stub "$root/bin/crt/"
  cp "$work/deb/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$root/nvvm/bin/"
  cp "$nv/cuda_nvcc/bin/ptxas" "$root/bin/"
  cp -r "$nv/cuda_nvcc/nvvm/libdevice" "$root/nvvm/"
  cp -r "$nv/cuda_runtime/include/." "$nv/cuda_nvcc/include/." "$root/include/"
  cp "$work/dev/$lib/libcudart_static.a" "$work/dev/$lib/libcudadevrt.a" "$nv/cuda_runtime/lib/libcudart.so.12" "$root/lib/"
  # The profile of a toolkit laid out as /usr/local/cuda is (lib/ as PyPI's CUDA 13 has it).
  cat >"$root/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE
  # nvcc last: its presence says the toolkit is complete. (/usr/bin/nvcc is Debian's wrapper.)
  cp "$work/deb/usr/lib/nvidia-cuda-toolkit/bin/nvcc" "$root/bin/nvcc"
  "$root/bin/nvcc" --version | tail -2
fi
if want cmake && [ ! -x "$venv/bin/cmake" ]; then
  echo "install-toolchain: CMake from PyPI into $venv"
  pip_install cmake==3.31.10
fi

# Debian packages, as root or through sudo without a password. Not fatal: `make example` needs
# neither (make test needs GoogleTest, make valgrind valgrind), so say what is missing and go on.
# (Their callers check again and stop with a clear message where they need them.)
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
if want gtest && [ ! -e /usr/lib/x86_64-linux-gnu/libgtest.a ] && [ ! -e /usr/src/googletest/googletest/src/gtest-all.cc ]; then
  echo "install-toolchain: GoogleTest: apt-get install libgtest-dev"
  apt_install libgtest-dev
fi
# valgrind: .ci/valgrind.sh runs every host test binary under memcheck.
if want valgrind && ! command -v valgrind >/dev/null; then
  echo "install-toolchain: valgrind: apt-get install valgrind"
  apt_install valgrind
fi
