#!/usr/bin/env bash
# Runs every host test binary under valgrind's memcheck and fails on any error or definite leak:
# the cargo test binaries (debug build, as `cargo test` builds them) and the C++ GoogleTest binary
# when it has been built (make all). Without a GPU the GPU tests skip, so this covers the host
# paths: the pool algorithm, the host resource, every adaptor, the bridge.
#
# The model-based tests take RMM_MODEL_OPS calls each here (default 20000) instead of 10^5, and
# the 10^6-call traces of tests/adaptors.rs and tests/pool.rs are skipped: model_scale runs the
# same resources through the same checks, at that reduced count, under valgrind. So is the
# slowest thread test (about a minute under valgrind, which runs one thread at a time anyway),
# and the stress of log lines formatted while another thread sets TZ 20000 times (it tests a race
# between threads, which valgrind's one-thread-at-a-time scheduling cannot show, and takes many
# minutes there); the other thread tests run. Add --track-origins=yes to vg below when hunting an uninitialised
# read (it doubles the time).
#
# Environment: CARGO_TARGET_DIR (default ./target), RMM_MODEL_OPS, BUILD (default ./build/cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (.ci/install-toolchain.sh installs it)"; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
export RMM_MODEL_OPS=${RMM_MODEL_OPS:-20000}
build=${BUILD:-$PWD/build/cpp}

# Only definite leaks count: the Rust runtime and the test harness keep a few per-thread
# allocations alive until exit ("possibly lost"/"still reachable"), which are not ours to free.
vg=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite -q)
skip=(--skip statistics_model_with_push_pop --skip tracking_model --skip limiting_model
      --skip logging_model_replays_exactly --skip failure_callback_model
      --skip random_trace_matches_model_and_returns_everything
      --skip random_trace_with_ordered_streams_matches_model
      --skip threads_share_logging_over_tracking_over_statistics
      --skip formatting_while_another_thread_sets_tz)

# The test executables cargo builds (unit tests of the library and the binaries, integration tests).
mapfile -t bins < <(cargo test --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
')
[ "${#bins[@]}" -gt 0 ] || { echo "no test binaries found"; exit 1; }

failed=()
run() {
  local name=$1; shift
  local start=$SECONDS
  if "$@" > "$tmp/out" 2>&1; then
    echo "valgrind $name: clean ($((SECONDS - start)) s) $(grep -E '^test result:|^\[  PASSED  \]' "$tmp/out" | tr '\n' ' ')"
  else
    cat "$tmp/out"
    echo "valgrind $name: FAILED"
    failed+=("$name")
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for b in "${bins[@]}"; do
  run "$(basename "$b")" "${vg[@]}" "$b" --exact "${skip[@]}"
done
if [ -x "$build/bin/rmm_cpp_tests" ]; then
  run rmm_cpp_tests "${vg[@]}" "$build/bin/rmm_cpp_tests"
else
  echo "valgrind rmm_cpp_tests: not built ($build/bin/rmm_cpp_tests); run make all first"
  failed+=(rmm_cpp_tests)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "valgrind: errors in ${failed[*]}"
  exit 1
fi
echo "valgrind: ${#bins[@]} cargo test binaries and the C++ tests ran clean"
