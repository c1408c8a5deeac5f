# Sourced by the scripts that compile against both RMM and rmm-rs (benches/run_side_by_side.sh,
# tests/oracle/cpp/build.sh), which define REPO and die.
#
# find_cuda_home: prints the CUDA toolkit root: CUDA_HOME where set, else the pinned PyPI toolkit
# in .venv-cuda (.ci/install-toolchain.sh), else the one of the nvcc on the PATH.
find_cuda_home() {
  if [ -n "${CUDA_HOME:-}" ]; then echo "$CUDA_HOME"; return; fi
  local c
  for c in "$REPO"/.venv-cuda/lib/python3*/site-packages/nvidia/cu13; do
    if [ -x "$c/bin/nvcc" ]; then echo "$c"; return; fi
  done
  if command -v nvcc >/dev/null; then dirname "$(dirname "$(command -v nvcc)")"; return; fi
  die "no nvcc: run .ci/install-toolchain.sh (makes .venv-cuda) or set CUDA_HOME"
}
