#!/usr/bin/env bash
# Every GPU test of rmm-rs, N rounds: the one command to run on a GPU host
# (`make gpu-check GPU_REPEAT=20` builds everything and runs it; tests/gpu/README.md).
#
# One round runs, each in turn with its output in $LOGS/round-NN/NAME.log:
#   - every Rust test binary, as cargo test runs them (one after another, each with the test
#     harness's default number of threads); the model-based tests take RMM_MODEL_OPS calls
#     (default here 100000; full scale is 10^7 and takes minutes)
#   - rmm_cpp_tests (every test), every example, and the stress programs with quick settings:
#     gpu_stress $GPU_STRESS_ARGS --seed ROUND, stream_reuse_stress $STREAM_REUSE_ARGS --seed ROUND
#     and, when that passed, stream_reuse_stress $STREAM_REUSE_SHARED_ARGS --seed ROUND (threads
#     sharing streams; its log is stream_reuse_stress_shared.log)
# and prints one line. A failure prints the last 40 lines of that binary's log, and the next round
# runs all the same. The exit status is non-zero when any round failed. Without a GPU everything
# skips and passes.
#
#   bash tests/gpu/check.sh [--repeat N] [--bin DIR] [--only rust|cpp]
#
#   --repeat N      rounds (default 1)
#   --bin DIR       prebuilt binaries: DIR/rust/NAME (Rust test binaries) and DIR/cpp/NAME (C++
#                   programs), as tests/gpu/package.sh makes them. Without it, package.sh builds
#                   them here (cargo test --release --no-run and make all) into build/gpu.
#   --only rust|cpp only the Rust test binaries, or only the C++ programs
#
# Environment: LOGS (default /tmp/gpu-check-logs), RMM_MODEL_OPS (default 100000), CHECK_TIMEOUT
# (seconds per binary, default 900), GPU_STRESS_ARGS (default "--small --ops 5000"),
# STREAM_REUSE_ARGS (default "--lifetimes 2000"), STREAM_REUSE_SHARED_ARGS (default "--lifetimes
# 2000 --threads 8 --streams-shared 2"); RMM_TEST_SEED and the other test variables pass through.
set -uo pipefail

repeat=1
bin=""
only=all
die() { echo "check: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) [ $# -ge 2 ] || die "--repeat needs a number"; repeat=$2; shift 2 ;;
    --bin) [ $# -ge 2 ] || die "--bin needs a folder"; bin=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs rust or cpp"; only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat takes a whole number of rounds, 1 or more (got '$repeat')"
case $only in all|rust|cpp) ;; *) die "--only takes rust or cpp (got '$only')" ;; esac

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
if [ -n "$bin" ]; then
  b=$(cd "$bin" 2>/dev/null && pwd -P) || die "no folder $bin"
  bin=$b
fi
# The Rust tests read tests/data relative to the working directory, as under cargo.
cd "$repo" || exit 2
LOGS=${LOGS:-/tmp/gpu-check-logs}
export RMM_MODEL_OPS=${RMM_MODEL_OPS:-100000}
timeout_s=${CHECK_TIMEOUT:-900}
read -r -a stress_args <<<"${GPU_STRESS_ARGS-"--small --ops 5000"}"
read -r -a reuse_args <<<"${STREAM_REUSE_ARGS-"--lifetimes 2000"}"
read -r -a reuse_shared_args <<<"${STREAM_REUSE_SHARED_ARGS-"--lifetimes 2000 --threads 8 --streams-shared 2"}"
mkdir -p "$LOGS" || exit 2
LOGS=$(cd "$LOGS" && pwd -P)
rm -rf "$LOGS"/round-* "$LOGS/summary"

if [ -z "$bin" ]; then
  echo "check: building (tests/gpu/package.sh --out build/gpu --no-strip)"
  bash "$repo/tests/gpu/package.sh" --out "$repo/build/gpu" --no-strip || die "the build failed"
  bin=$repo/build/gpu
fi

# What there is to run.
rust=()
if [ "$only" != cpp ]; then
  for f in "$bin"/rust/*; do [ -f "$f" ] && [ -x "$f" ] && rust+=("$f"); done
  [ ${#rust[@]} -gt 0 ] || die "no Rust test binaries in $bin/rust"
fi
cpp_tests="" examples=() stress=() notes=()
if [ "$only" != rust ]; then
  [ -x "$bin/cpp/rmm_cpp_tests" ] || die "no rmm_cpp_tests in $bin/cpp"
  cpp_tests=$bin/cpp/rmm_cpp_tests
  for f in "$bin"/cpp/*; do
    if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
    name=$(basename "$f")
    case $name in
      rmm_cpp_tests) ;;
      rmm_exit_child) ;;  # rmm_cpp_tests' ProcessExit tests run it
      gpu_stress|stream_reuse_stress) stress+=("$f") ;;
      *)
        if [ -f "examples/$name.cu" ] || [ -f "examples/c/$name.c" ] || [ -f "tests/c/$name.c" ]; then
          examples+=("$f")
        else
          notes+=("$name (no quick setting known here)")
        fi ;;
    esac
  done
fi

# A test that reads files at the paths it was built with (env! of CARGO_MANIFEST_DIR and friends:
# benches/replay/tests/replay.rs) runs only where those paths exist. package.sh records them.
build_repo="" build_target=""
if [ -f "$bin/rust/.build-paths" ]; then
  build_repo=$(sed -n 's/^repo=//p' "$bin/rust/.build-paths")
  build_target=$(sed -n 's/^target=//p' "$bin/rust/.build-paths")
fi
if [ -n "$build_repo" ] && { [ ! -d "$build_repo/tests/data" ] || [ ! -d "$build_target" ]; }; then
  kept=()
  for f in "${rust[@]}"; do
    if grep -qaF -e "$build_repo" -e "$build_target" "$f"; then
      notes+=("$(basename "$f") (reads files at the paths of the machine that built it, $build_repo and $build_target)")
    else
      kept+=("$f")
    fi
  done
  rust=("${kept[@]}")
  [ "$only" = cpp ] || [ ${#rust[@]} -gt 0 ] || die "no Rust test binary can run here"
fi

echo "check: $repeat round(s) of the binaries in $bin; logs in $LOGS"
echo "check: RMM_MODEL_OPS=$RMM_MODEL_OPS, at most ${timeout_s}s a binary"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/check: GPU /'
else
  echo "check: no nvidia-smi here"
fi
[ ${#rust[@]} -eq 0 ] || echo "check: Rust: $(for f in "${rust[@]}"; do basename "$f"; done | tr '\n' ' ')"
if [ "$only" != rust ]; then
  echo "check: C++: rmm_cpp_tests $(for f in "${examples[@]}" "${stress[@]}"; do basename "$f"; done | tr '\n' ' ')"
fi
for n in "${notes[@]}"; do echo "check: not run: $n"; done

# Runs one binary with its output in LOG; sets rc and secs.
run_one() {  # LOG EXE ARGS...
  local log=$1 start
  shift
  start=$(date +%s%N)
  timeout --kill-after=30 "$timeout_s" "$@" >"$log" 2>&1
  rc=$?
  secs=$(( ($(date +%s%N) - start) / 1000000000 ))
  echo "$(basename "$1") rc=$rc ${secs}s" >>"$(dirname "$log")/times"
}
join() {  # SEPARATOR WORDS...
  local sep=$1 out=$2
  shift 2
  for w in "$@"; do out+="$sep$w"; done
  printf '%s' "$out"
}
is_skipped() { grep -q '^skipped: no CUDA device' "$1"; }

failed_rounds=0
failures=()   # "round N: NAME", for the summary
for ((round = 1; round <= repeat; round++)); do
  dir=$(printf '%s/round-%02d' "$LOGS" "$round")
  mkdir -p "$dir"
  round_start=$SECONDS
  bad=()      # NAME (why) of this round's failures
  parts=()

  if [ ${#rust[@]} -gt 0 ]; then
    passed=0 rust_bad=0
    for f in "${rust[@]}"; do
      name=$(basename "$f")
      run_one "$dir/$name.log" "$f"
      # The harness's last line: "test result: ok. 12 passed; 0 failed; 0 ignored; ...".
      result=$(grep -E '^test result: ' "$dir/$name.log" | tail -1)
      p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$result")
      fl=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$result")
      passed=$((passed + ${p:-0}))
      if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        bad+=("$name (timed out after ${timeout_s}s)")
      elif [ -z "$result" ]; then
        bad+=("$name (rc=$rc, no test result)")
      elif [ $rc -ne 0 ] || [ "${fl:-0}" != 0 ]; then
        bad+=("$name (rc=$rc, ${fl:-?} failed)")
      else
        continue
      fi
      rust_bad=$((rust_bad + 1))
    done
    parts+=("rust ${#rust[@]} binaries / $passed tests passed$([ $rust_bad -gt 0 ] && echo " / $rust_bad binaries FAILED")")
  fi

  if [ -n "$cpp_tests" ]; then
    run_one "$dir/rmm_cpp_tests.log" "$cpp_tests"
    p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$dir/rmm_cpp_tests.log" | tail -1)
    s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?.*/\1/p' "$dir/rmm_cpp_tests.log" | tail -1)
    fl=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$dir/rmm_cpp_tests.log" | tail -1)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      bad+=("rmm_cpp_tests (timed out after ${timeout_s}s)"); parts+=("cpp TIMEOUT")
    elif [ $rc -ne 0 ] || [ -z "$p" ] || [ -n "$fl" ]; then
      bad+=("rmm_cpp_tests (rc=$rc, ${fl:-0} failed)"); parts+=("cpp ${p:-0} passed ${fl:-?} FAILED")
    else
      parts+=("cpp $p passed ${s:-0} skipped")
    fi

    # Examples, then stress programs: one word for each group.
    for group in examples stress; do
      if [ $group = examples ]; then list=("${examples[@]}"); else list=("${stress[@]}"); fi
      [ ${#list[@]} -gt 0 ] || { parts+=("$group none"); continue; }
      ok=0 skipped=0
      for f in "${list[@]}"; do
        name=$(basename "$f")
        case $name in
          gpu_stress) args=("${stress_args[@]}" --seed "$round") ;;
          stream_reuse_stress) args=("${reuse_args[@]}" --seed "$round") ;;
          *) args=() ;;
        esac
        run_one "$dir/$name.log" "$f" "${args[@]}"
        if [ "$name" = stream_reuse_stress ] && [ $rc -eq 0 ] && ! is_skipped "$dir/$name.log"; then
          # Again with threads sharing streams (its own log); the program counts once.
          name=stream_reuse_stress_shared
          run_one "$dir/$name.log" "$f" "${reuse_shared_args[@]}" --seed "$round"
        fi
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
          bad+=("$name (timed out after ${timeout_s}s)")
        elif [ $rc -ne 0 ]; then
          bad+=("$name (rc=$rc)")
        elif is_skipped "$dir/$name.log"; then
          skipped=$((skipped + 1))
        else
          ok=$((ok + 1))
        fi
      done
      n=${#list[@]}
      if [ $((ok + skipped)) -lt "$n" ]; then
        parts+=("$group $((n - ok - skipped)) of $n FAILED")
      elif [ "$skipped" -gt 0 ]; then
        parts+=("$group skipped ($skipped of $n: no CUDA device)")
      else
        parts+=("$group ok ($n)")
      fi
    done
  fi

  line="round $round: $(join ', ' "${parts[@]}"), $((SECONDS - round_start)) s"
  if [ ${#bad[@]} -gt 0 ]; then
    failed_rounds=$((failed_rounds + 1))
    line="$line -- FAILED: $(join '; ' "${bad[@]}")"
  fi
  echo "$line" | tee -a "$LOGS/summary"
  for b in "${bad[@]}"; do
    name=${b%% *}
    failures+=("round $round: $b")
    echo "---- round $round, $name: last 40 lines of $dir/$name.log"
    tail -n 40 "$dir/$name.log"
    echo "---- end of $name"
  done
done

passed_rounds=$((repeat - failed_rounds))
echo "check: $passed_rounds of $repeat rounds passed (logs: $LOGS)" | tee -a "$LOGS/summary"
for f in "${failures[@]}"; do echo "check: failed: $f"; done
[ "$failed_rounds" -eq 0 ]
