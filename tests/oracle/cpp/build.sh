#!/usr/bin/env bash
# Builds the C++ oracle scenarios twice, into .oracle/ (copy it to the GPU host):
#   .oracle/oracle_cpp_rmm    against RMM 26.10 (its headers, librmm.so; both .so files beside it)
#   .oracle/oracle_cpp_ours   against rmm-rs (include/, target/release/librmm_cpp.a, cxx bridge headers
#                             staged under build/oracle-cpp/cxxbridge)
# No GPU needed. Needs nvcc 13 + CCCL (.venv-cuda or CUDA_HOME), cargo, and RMM 26.10's wheels
# unpacked (RMM_DIR, default build/bench/rmm as benches/run_side_by_side.sh build leaves it; or
# RMM_WHEEL_DIR holding librmm_cu13-26.10.0*.whl and rapids_logger*.whl, unpacked here).
#   bash tests/oracle/cpp/build.sh          # both sides
#   SIDES=ours bash tests/oracle/cpp/build.sh   # one side (ours or rmm)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
SRC="$REPO/tests/oracle/cpp"
BUNDLE="$REPO/.oracle"
WORK="$REPO/build/oracle-cpp"
ARCH="${ARCH:-sm_90}"
SIDES="${SIDES:-ours rmm}"

die() { echo "oracle build: $*" >&2; exit 1; }

# shellcheck source=benches/cuda_home.sh
source "$REPO/benches/cuda_home.sh"

find_rmm() {
  local d
  for d in "${RMM_DIR:-}" "$REPO/build/bench/rmm" "$WORK/rmm"; do
    if [ -n "$d" ] && [ -f "$d/librmm/lib64/librmm.so" ] && [ -f "$d/rapids_logger/lib64/librapids_logger.so" ]; then
      echo "$d"; return
    fi
  done
  local wheels="${RMM_WHEEL_DIR:-}"
  [ -n "$wheels" ] || die "RMM 26.10 not found: set RMM_DIR (unpacked wheels) or RMM_WHEEL_DIR (the wheels)"
  rm -rf "$WORK/rmm" && mkdir -p "$WORK/rmm"
  local w
  for w in "$wheels"/librmm_cu13-26.10.0-*.whl "$wheels"/rapids_logger-*.whl; do
    [ -f "$w" ] || die "RMM_WHEEL_DIR=$wheels lacks the librmm-cu13 26.10.0 or rapids-logger wheel"
    python3 -m zipfile -e "$w" "$WORK/rmm"
  done
  echo "$WORK/rmm"
}

cuda_home="$(find_cuda_home)"
nvcc="$cuda_home/bin/nvcc"
cccl="${CCCL_INCLUDE:-$cuda_home/include/cccl}"
target="${CARGO_TARGET_DIR:-$REPO/target}"
case "$target" in /*) ;; *) target="$REPO/$target" ;; esac

# The same CCCL configuration on both sides (what RMM 26.10's wheel needs).
common=(-std=c++20 -O1 -arch="$ARCH" -Xcompiler=-Wall -Xcompiler=-Wno-unused-variable
        -DCUB_DISABLE_NAMESPACE_MAGIC -DCUB_IGNORE_NAMESPACE_MAGIC_ERROR
        -DTHRUST_DISABLE_ABI_NAMESPACE -DTHRUST_IGNORE_ABI_NAMESPACE_ERROR -DCCCL_DISABLE_PDL
        --extended-lambda)
sources=("$SRC"/*.cu)
objs() { local s; for s in "${sources[@]}"; do echo "$WORK/$1/$(basename "${s%.cu}").o"; done; }
mkdir -p "$BUNDLE" "$WORK"

# compile SIDE: every source into $WORK/SIDE/*.o, two at a time.
compile() {
  local side="$1" inc=()
  if [ "$side" = ours ]; then
    inc=(-I"$cccl" -I"$REPO/include" -I"$WORK/cxxbridge")
  else
    inc=(-I"$rmm/librmm/include/rapids" -I"$rmm/librmm/include" -I"$rmm/rapids_logger/include")
  fi
  mkdir -p "$WORK/$side"
  local s o pids=()
  for s in "${sources[@]}"; do
    o="$WORK/$side/$(basename "${s%.cu}").o"
    # Up to date: newer than its source, the harness headers and (ours) every header it includes.
    if [ -f "$o" ] && [ "$o" -nt "$s" ] && [ -z "$(find "$SRC" -name '*.hpp' -newer "$o")" ] &&
       { [ "$side" != ours ] || [ -z "$(find -L "$REPO/include" "$WORK/cxxbridge" -newer "$o" -print -quit)" ]; }; then
      continue
    fi
    "$nvcc" "${common[@]}" -DORACLE_SIDE="\"$side\"" "${inc[@]}" -c "$s" -o "$o" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "${JOBS:-2}" ]; then wait "${pids[0]}" || die "compiling ($side) failed"; pids=("${pids[@]:1}"); fi
  done
  local p
  for p in "${pids[@]}"; do wait "$p" || die "compiling ($side) failed"; done
}

for side in $SIDES; do
  case "$side" in
    ours)
      echo "== cargo build --release (librmm_cpp.a, rmm_replay)"
      CARGO_TARGET_DIR="$target" cargo build --release --quiet --manifest-path "$REPO/Cargo.toml"
      # A copy of the bridge headers, dated by their text (the script says why).
      bash "$REPO/tests/cpp/stage_bridge_headers.sh" "$target/cxxbridge" "$WORK/cxxbridge"
      echo "== nvcc (ours)"
      compile ours
      "$nvcc" -arch="$ARCH" $(objs ours) -o "$WORK/oracle_cpp_ours" \
        "$target/release/librmm_cpp.a" -lpthread -ldl -L"$cuda_home/lib" -L"$cuda_home/lib64"
      strip -o "$BUNDLE/oracle_cpp_ours" "$WORK/oracle_cpp_ours"
      ;;
    rmm)
      rmm="$(find_rmm)"
      echo "== nvcc (RMM 26.10 from $rmm)"
      compile rmm
      "$nvcc" -arch="$ARCH" $(objs rmm) -o "$WORK/oracle_cpp_rmm" \
        -L"$cuda_home/lib" -L"$cuda_home/lib64" -L"$rmm/librmm/lib64" -L"$rmm/rapids_logger/lib64" \
        -lrmm -lrapids_logger -Xlinker -rpath -Xlinker '$ORIGIN'
      strip -o "$BUNDLE/oracle_cpp_rmm" "$WORK/oracle_cpp_rmm"
      rm -f "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so"
      cp "$rmm/librmm/lib64/librmm.so" "$rmm/rapids_logger/lib64/librapids_logger.so" "$BUNDLE/"
      strip --strip-unneeded "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so"
      chmod 755 "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so"
      ;;
    *) die "unknown side $side (ours or rmm)" ;;
  esac
done
du -ch "$BUNDLE" | tail -1
for side in $SIDES; do
  echo "oracle_cpp_$side: $("$BUNDLE/oracle_cpp_$side" --list | wc -l) scenarios"
done
if [ "$SIDES" = "ours rmm" ] || [ "$SIDES" = "rmm ours" ]; then
  bash "$SRC/selftest.sh"
fi
