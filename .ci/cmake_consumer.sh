#!/usr/bin/env bash
# The CMake package as a new user meets it (CI runs this after `make test`):
#   1. rmm-rs alone with examples and tests off: `cmake --build` builds librmm_cpp.a (cargo is part of
#      ALL); `cmake --install` into a temporary prefix, checked file by file; an install before
#      anything was built fails and copies nothing;
#   2. tests/cmake_consumer via find_package(rmm CONFIG REQUIRED) from that prefix: configured,
#      built, run (the CCCL directory rmm-rs was built with is the consumer's default);
#   3. tests/cmake_consumer via add_subdirectory(<this repository>): configured, built, run;
#   4. rmm-rs with tests on: builds rmm_cpp_tests, rmm_exit_child and gpu_stress, as `make` does;
#      then ctest. (Examples off here: `make test` has built and run them; RMM_BUILD_EXAMPLES=ON
#      adds them to ctest.)
#   5. the default CMAKE_CUDA_ARCHITECTURES (none given), configure only: native with a GPU, else
#      every architecture of the nvcc from 75 on (steps 1 to 4 build for 90 alone, to save time).
# Without a GPU the programs print "skipped: no CUDA device" and pass. Exits non-zero on any failure.
#
# Environment: CUDA_HOME (default: the pinned toolchain in .venv-cuda, installed if missing),
# CCCL_INCLUDE (default $CUDA_HOME/include/cccl), CMAKE (default .venv-cuda/bin/cmake),
# RMM_CARGO_TARGET_DIR (default $CARGO_TARGET_DIR, else ./target: the one `make` uses, so cargo has
# nothing to rebuild; cargo locks the directory, so sharing it is safe), JOBS (default 2),
# RMM_CMAKE_TESTS=0 to skip step 4, RMM_CMAKE_KEEP=1 to keep the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$SECONDS
jobs=${JOBS:-2}

if [ -z "${CUDA_HOME:-}" ] || [ -z "${CMAKE:-}" ]; then
  bash .ci/install-toolchain.sh cuda cmake   # idempotent: nothing to do when they are there
fi
if [ -z "${CUDA_HOME:-}" ]; then
  CUDA_HOME=$(.venv-cuda/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia/cu13
fi
cccl=${CCCL_INCLUDE:-$CUDA_HOME/include/cccl}
cmake=${CMAKE:-$repo/.venv-cuda/bin/cmake}
ctest=$(dirname "$cmake")/ctest
target=${RMM_CARGO_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}}
# nvcc (PyPI layout) looks for cudart in lib64; the wheel has lib.
export LIBRARY_PATH=$CUDA_HOME/lib${LIBRARY_PATH:+:$LIBRARY_PATH}

work=$(mktemp -d)
if [ "${RMM_CMAKE_KEEP:-0}" = 1 ]; then echo "cmake_consumer: work directory $work"; else
  trap 'rm -rf "$work"' EXIT; fi
toolkit=(-DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" -DCUDAToolkit_ROOT="$CUDA_HOME"
         -DCMAKE_CUDA_ARCHITECTURES=90)
step() { echo "== cmake_consumer ($((SECONDS - start)) s): $*"; }
fail() { echo "cmake_consumer: FAILED: $*"; exit 1; }
run_consumer() {
  local out
  out=$("$1/consumer") || fail "$1/consumer exited with $?: $out"
  echo "$out"
  case $out in "skipped: no CUDA device"|*": OK") ;; *) fail "$1/consumer printed: $out" ;; esac
}

step "$("$cmake" --version | head -1), $("$CUDA_HOME/bin/nvcc" --version | tail -1), cargo target $target"

step "1. rmm-rs with examples and tests off: build, install"
"$cmake" -S . -B "$work/rmm" -DRMM_BUILD_EXAMPLES=OFF -DRMM_BUILD_TESTS=OFF \
  -DRMM_CARGO_TARGET_DIR="$target" -DRMM_CCCL_INCLUDE_DIR="$cccl" "${toolkit[@]}" > "$work/rmm.log" \
  || { cat "$work/rmm.log"; fail "configure"; }
"$cmake" --build "$work/rmm" -j"$jobs"
[ -f "$target/release/librmm_cpp.a" ] || fail "cmake --build did not build $target/release/librmm_cpp.a"
"$cmake" --install "$work/rmm" --prefix "$work/prefix" > "$work/install.log" \
  || { cat "$work/install.log"; fail "cmake --install"; }
for f in include/rmm/mr/pool_memory_resource.hpp include/rmm-rs/rust/cxx.h \
         include/rmm-rs/rmm-rs/src/bridge.rs.h lib/librmm_rs.a lib/cmake/rmm/rmm-config.cmake \
         lib/cmake/rmm/rmm-config-version.cmake lib/cmake/rmm/RmmCccl.cmake; do
  [ -f "$work/prefix/$f" ] || fail "the install lacks $f"
done
for f in include/rust lib/librmm.a; do
  [ ! -e "$work/prefix/$f" ] || fail "the install has $f, which other packages install too"
done
(cd "$work/prefix" && find . -type f -not -path './include/rmm/*' | sort &&
 echo "./include/rmm: $(find include/rmm -name '*.hpp' | wc -l) headers")

step "1b. cmake --install before cmake --build fails and installs nothing"
"$cmake" -S . -B "$work/unbuilt" -DRMM_BUILD_EXAMPLES=OFF -DRMM_BUILD_TESTS=OFF \
  -DRMM_CARGO_TARGET_DIR="$work/unbuilt-cargo" "${toolkit[@]}" > "$work/unbuilt.log" \
  || { cat "$work/unbuilt.log"; fail "configure"; }
if "$cmake" --install "$work/unbuilt" --prefix "$work/partial" > "$work/partial.log" 2>&1; then
  fail "cmake --install of an unbuilt tree succeeded"
fi
grep -q "before installing" "$work/partial.log" || { cat "$work/partial.log"; fail "no clear message"; }
[ ! -e "$work/partial" ] || fail "cmake --install of an unbuilt tree left $(find "$work/partial" -type f | wc -l) files"
echo "failed as it should, nothing installed: $(grep -o 'rmm-rs: [^ ]*librmm_cpp.a' "$work/partial.log") does not exist"

step "2. tests/cmake_consumer with find_package(rmm) from the install"
"$cmake" -S tests/cmake_consumer -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${toolkit[@]}" > "$work/installed.log" || { cat "$work/installed.log"; fail "configure"; }
grep -E "^-- rmm-rs: CCCL" "$work/installed.log"
grep -qx "RMM_CCCL_INCLUDE_DIR:PATH=$cccl" "$work/installed/CMakeCache.txt" \
  || fail "the installed config did not default RMM_CCCL_INCLUDE_DIR to $cccl"
"$cmake" --build "$work/installed" -j"$jobs"
run_consumer "$work/installed"

step "3. tests/cmake_consumer with add_subdirectory($repo)"
"$cmake" -S tests/cmake_consumer -B "$work/subdir" -DRMM_SOURCE_DIR="$repo" \
  -DRMM_CARGO_TARGET_DIR="$target" -DRMM_CCCL_INCLUDE_DIR="$cccl" "${toolkit[@]}" \
  > "$work/subdir.log" || { cat "$work/subdir.log"; fail "configure"; }
"$cmake" --build "$work/subdir" -j"$jobs"
run_consumer "$work/subdir"

if [ "${RMM_CMAKE_TESTS:-1}" != 0 ]; then
  step "4. rmm-rs with tests on: build, ctest"
  "$cmake" -S . -B "$work/tests" -DRMM_BUILD_EXAMPLES=OFF -DRMM_CARGO_TARGET_DIR="$target" \
    -DRMM_CCCL_INCLUDE_DIR="$cccl" "${toolkit[@]}" > "$work/tests.log" \
    || { cat "$work/tests.log"; fail "configure"; }
  "$cmake" --build "$work/tests" -j"$jobs" > "$work/tests-build.log" 2>&1 \
    || { cat "$work/tests-build.log"; fail "build with tests on"; }
  tail -2 "$work/tests-build.log"
  for b in rmm_cpp_tests rmm_exit_child gpu_stress; do
    [ -x "$work/tests/$b" ] || fail "the tests-on build did not build $b"
  done
  (cd "$work/tests" && "$ctest" --output-on-failure) || fail "ctest"
fi

step "5. the default CUDA architectures (configure only): native with a GPU, else nvcc's list from 75 on"
"$cmake" -S . -B "$work/archs" -DRMM_BUILD_EXAMPLES=OFF -DRMM_CARGO_TARGET_DIR="$target" \
  -DRMM_CCCL_INCLUDE_DIR="$cccl" -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" \
  -DCUDAToolkit_ROOT="$CUDA_HOME" > "$work/archs.log" || { cat "$work/archs.log"; fail "configure"; }
line=$(grep -E "^-- rmm-rs: CUDA architectures" "$work/archs.log") || { cat "$work/archs.log"; fail "no architectures line"; }
echo "$line"
case $line in
  *"GPU present"*) [[ $line == *" native "* ]] || fail "a GPU is present but the default is not native" ;;
  *) [[ $line == *"75-real"*"-virtual"* ]] || fail "no GPU, but the default is not the list from 75 on" ;;
esac

step "OK"
