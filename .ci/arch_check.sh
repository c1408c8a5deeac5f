#!/usr/bin/env bash
# The GPU architectures of a program make built on a machine without a GPU (CI runs this after
# `make test`, which built build/cpp/bin/thrust_sort with make's defaults): its machine code must
# cover every architecture of the README's "Supported GPUs" table that the nvcc supports, and it
# must carry PTX of the newest of them, for GPUs newer still. cuobjdump comes from PyPI
# (nvidia-cuda-cuobjdump, into a temporary venv) where the toolkit has none.
#
#   bash .ci/arch_check.sh [PROGRAM]     # default: build/cpp/bin/thrust_sort
set -euo pipefail
cd "$(dirname "$0")/.."
prog=${1:-build/cpp/bin/thrust_sort}
fail() { echo "arch_check: FAILED: $*" >&2; exit 1; }
[ -x "$prog" ] || fail "no $prog (make example builds it)"

eval "$(bash tools/cuda_toolchain.sh --quiet)"
case $ARCH in *" "*) ;; *) echo "arch_check: make chose '$ARCH' here (a GPU or ARCH given): nothing to check"; exit 0 ;; esac

cuobjdump=$(dirname "$NVCC")/cuobjdump
if [ ! -x "$cuobjdump" ]; then
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q --disable-pip-version-check --no-deps nvidia-cuda-cuobjdump==13.5.37 \
    || fail "pip install nvidia-cuda-cuobjdump"
  cuobjdump=$(echo "$work"/venv/lib/python3*/site-packages/nvidia/cu13/bin/cuobjdump)
fi

# The README's table: the `sm_NN` of its rows, those this nvcc makes.
readme=$(sed -n '/^## Supported GPUs/,/^## /p' README.md | grep '^|' | grep -o 'sm_[0-9]*' | sort -uV)
[ -n "$readme" ] || fail "no architectures in README.md's Supported GPUs table"
codes=$("$NVCC" --list-gpu-code | grep -x 'sm_[0-9]*' | sort -uV)
want=$(comm -12 <(echo "$readme" | sort) <(echo "$codes" | sort) | sort -V)
elf=$("$cuobjdump" --list-elf "$prog" | grep -o 'sm_[0-9a-z]*' | sort -uV)
ptx=$("$cuobjdump" --list-ptx "$prog" | grep -o 'sm_[0-9a-z]*' | sort -uV)
echo "arch_check: $prog: machine code for $(echo $elf), PTX for $(echo $ptx)"
echo "arch_check: README's architectures that nvcc $NVCC_VERSION makes: $(echo $want)"
missing=$(comm -23 <(echo "$want" | sort) <(echo "$elf" | sort))
[ -z "$missing" ] || fail "no machine code for $(echo $missing)"
newest=$(echo "$want" | tail -1)
echo "$ptx" | grep -qx "$newest" || fail "no PTX for the newest, $newest"
echo "arch_check: OK"
