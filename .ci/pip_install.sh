#!/usr/bin/env bash
# The Python package installed as a user installs it, each way into a fresh venv: from the source
# folder (pip install ./python), from a git URL (pip install "git+file://...#subdirectory=python",
# the repository's committed HEAD), as a wheel (pip wheel ./python, then pip install the .whl) and
# built for CUDA 12 (MATURIN_PEP517_ARGS="--no-default-features --features cuda-12" pip install
# ./python); each time `import rmm` runs from outside the tree, and the build's CUDA major is
# checked. Needs python3 (3.10 or newer), cargo and a C++
# compiler; no CUDA toolkit and no GPU (the extension loads the CUDA driver when it runs).
#
#   bash .ci/pip_install.sh            # PYTHON3=python3.12 to choose the interpreter
#   WHEEL_OUT=DIR bash .ci/pip_install.sh   # also keeps the wheel in DIR (to install elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
PYTHON3=${PYTHON3:-python3}
for tool in cargo c++; do
    command -v "$tool" >/dev/null || {
        echo "pip_install: '$tool' is not on PATH; building the extension needs cargo (Rust 1.86+) and a C++ compiler" >&2
        exit 1
    }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fresh_venv() {
    rm -rf "$work/venv"
    "$PYTHON3" -m venv "$work/venv"
}

check() {  # $1: how it was installed, $2: the CUDA major it must be built for (default 13)
    # From outside the repository, so that python/rmm in the tree cannot stand in for the install.
    (cd "$work" && "$work/venv/bin/python" -c "import rmm, rmm._native as n; print(rmm.__version__)
assert n.build_cuda_major() == ${2:-13}, n.build_cuda_major()") \
        || { echo "pip_install: import rmm failed after $1 (or not built for CUDA ${2:-13})" >&2; exit 1; }
    echo "pip_install: ok: $1"
}

fresh_venv
"$work/venv/bin/python" -m pip install "$repo/python"
check "pip install ./python"

fresh_venv
"$work/venv/bin/python" -m pip install "git+file://$repo#subdirectory=python"
check "pip install git+file://<repository>#subdirectory=python"

fresh_venv
"$work/venv/bin/python" -m pip wheel --no-deps "$repo/python" -w "$work/wheels"
wheel=$(ls "$work"/wheels/rmm_rs-*.whl)
"$work/venv/bin/python" -m pip install "$wheel"
check "pip wheel ./python: $(basename "$wheel")"
if [ -n "${WHEEL_OUT:-}" ]; then
    mkdir -p "$WHEEL_OUT" && cp "$wheel" "$WHEEL_OUT/"
fi

fresh_venv
MATURIN_PEP517_ARGS="--no-default-features --features cuda-12" "$work/venv/bin/python" -m pip install "$repo/python"
check "MATURIN_PEP517_ARGS=\"--no-default-features --features cuda-12\" pip install ./python" 12
