#!/usr/bin/env bash
# Runs every program in one or more binary folders under compute-sanitizer memcheck
# (--leak-check full, and stream-ordered race tracking where the sanitizer has it), racecheck,
# synccheck and initcheck, each run with a time limit and --error-exitcode, and prints one table:
# run x tool -> result, errors, API errors, racecheck warnings, leaks, seconds, arguments. Needs a
# GPU; logs go to $LOGS.
#
#   bash tests/stress/run_sanitizers.sh [--list] [DIR...]
#
#   DIR     folders of programs (default build/cpp/bin): C++ programs (the examples, rmm_cpp_tests,
#           rmm_exit_child, the stress programs) and Rust test binaries, e.g. the two folders of
#           tests/gpu/package.sh: run_sanitizers.sh .gpu/bin/cpp .gpu/bin/rust. A Rust test
#           binary is one run per tool, all of its tests, with RMM_MODEL_OPS=20000 unless set.
#   --list  print the planned runs (label, tool, sanitizer options, program arguments) and exit
#
# Tests that make a CUDA call fail on purpose are listed in tests/gpu/failing_on_purpose.txt:
# `NAME *` runs the whole program only in a run labelled NAME[on-purpose]; `rmm_cpp_tests PATTERN`
# takes PATTERN out of the main run (a GoogleTest negative filter) and runs just PATTERN in
# rmm_cpp_tests[on-purpose] (a PATTERN for a Rust test binary is a test-name filter: --skip in
# the main run). On-purpose runs have --report-api-errors no; memory errors and leaks still fail
# them, and so does a pattern that matches no test.
#
# Environment:
#   COMPUTE_SANITIZER  the sanitizer (default: compute-sanitizer on PATH, else /usr/local/cuda/bin)
#   TOOLS              which tools (default "memcheck racecheck synccheck initcheck")
#   SANITIZER_TIMEOUT  seconds per run (default 300)
#   LOGS               where each run's log goes (default /tmp/sanitizer-logs)
#   JOBS               runs at once (default 2). They share the GPU, so their times then overlap;
#                      and several programs take a pool of half the free device memory, so more
#                      runs at once can make one of them run out of memory.
#   FAILING_LIST       default tests/gpu/failing_on_purpose.txt
#   PRINT_LIMIT        reports printed in full per run (default 20; the summary counts them all)
#   RMM_MODEL_OPS      calls per model-based Rust test (default here 20000)
#
# Result: ok (no error, no leak, exit 0), warn (racecheck warnings only: possible hazards the tool
# cannot rule out, listed in the log), host (a Rust test binary whose tests all passed without a
# CUDA call: the host-only ones; counted as ok), SKIPPED (no GPU), FAIL, TIMEOUT. The exit status is
# non-zero when any run is neither ok nor warn. Sizes are reduced where a program allows it
# (runs_for below); the table's last column shows the arguments each run got.
set -u

list_only=0
dirs=()
while [ $# -gt 0 ]; do
  case $1 in
    --list) list_only=1; shift ;;
    -h|--help) sed -n '2,/^set -u$/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_sanitizers: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || dirs=(build/cpp/bin)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
FAILING_LIST=${FAILING_LIST:-$repo/tests/gpu/failing_on_purpose.txt}
abs_dirs=()
for d in "${dirs[@]}"; do
  a=$(cd "$d" 2>/dev/null && pwd -P) || { echo "run_sanitizers: no folder $d" >&2; exit 2; }
  abs_dirs+=("$a")
done
[ -f "$FAILING_LIST" ] || { echo "run_sanitizers: no list $FAILING_LIST" >&2; exit 2; }
FAILING_LIST=$(cd "$(dirname "$FAILING_LIST")" && pwd -P)/$(basename "$FAILING_LIST")
# The Rust tests read tests/data relative to the working directory, as under cargo.
cd "$repo" || exit 2

TOOLS=${TOOLS:-memcheck racecheck synccheck initcheck}
TIMEOUT=${SANITIZER_TIMEOUT:-300}
LOGS=${LOGS:-/tmp/sanitizer-logs}
JOBS=${JOBS:-2}
export RMM_MODEL_OPS=${RMM_MODEL_OPS:-20000}
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
for tool in $TOOLS; do
  case $tool in memcheck|racecheck|synccheck|initcheck) ;;
    *) echo "run_sanitizers: unknown tool $tool in TOOLS" >&2; exit 2 ;;
  esac
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run_sanitizers: JOBS must be 1 or more" >&2; exit 2; }

TRACK=""
if [ -x "$CS" ]; then
  if "$CS" --help 2>/dev/null | grep -q -- '--track-stream-ordered-races'; then
    TRACK="--track-stream-ordered-races all"
  fi
elif [ $list_only = 1 ]; then
  echo "run_sanitizers: no compute-sanitizer here; memcheck is shown with --track-stream-ordered-races all, which is used where the sanitizer has it"
  TRACK="--track-stream-ordered-races all"
else
  echo "run_sanitizers: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
  exit 2
fi

# tests/gpu/failing_on_purpose.txt: PROGRAM PATTERN per line. whole[P]=1 for `P *`; pattern[P]
# holds the others, joined by ':' (GoogleTest) and listed in patterns_of[P] one a line (Rust).
declare -A whole=() pattern=() patterns_of=() listed=()
while read -r prog pat rest; do
  case $prog in ''|'#'*) continue ;; esac
  if [ -z "${pat:-}" ] || [ -n "${rest:-}" ]; then
    echo "run_sanitizers: $FAILING_LIST: expected 'PROGRAM PATTERN', got '$prog ${pat:-} ${rest:-}'" >&2
    exit 2
  fi
  listed[$prog]=1
  if [ "$pat" = '*' ]; then
    whole[$prog]=1
  else
    pattern[$prog]=${pattern[$prog]:+${pattern[$prog]}:}$pat
    patterns_of[$prog]=${patterns_of[$prog]:+${patterns_of[$prog]}$'\n'}$pat
  fi
done <"$FAILING_LIST"

is_gtest() { grep -qa -- 'gtest_filter' "$1"; }

# The runs of one program under one tool, one per line: LABEL|EXTRA SANITIZER OPTIONS|ARGS.
runs_for() {
  local name=$1 tool=$2 exe=$3 t='|' track=""
  [ "$tool" = memcheck ] && track=$TRACK
  local api_off="--report-api-errors no"
  if [ -n "${whole[$name]:-}" ]; then
    # Fails CUDA calls on purpose throughout: one run, API errors not reported.
    echo "${name}[on-purpose]${t}${api_off}${track:+ $track}${t}$(default_args "$name")"
    return
  fi
  if is_gtest "$exe"; then
    # rmm_cpp_tests: ProcessExit.* starts rmm_exit_child, which is swept on its own below;
    # LoggerEnvironment.* is a death test that re-runs the binary as its child, which the
    # sanitizer does not follow (its own code is swept by the Logger.* tests).
    local excluded=${pattern[$name]:-}
    [ "$name" = rmm_cpp_tests ] && excluded="${excluded:+$excluded:}ProcessExit.*:LoggerEnvironment.*"
    echo "${name}${t}${track}${t}${excluded:+--gtest_filter=-$excluded}"
    [ -z "${pattern[$name]:-}" ] ||
      echo "${name}[on-purpose]${t}${api_off}${track:+ $track}${t}--gtest_filter=${pattern[$name]}"
    return
  fi
  if [ -n "${pattern[$name]:-}" ]; then
    # A Rust test binary: its test-name filters.
    local skip="" p
    while read -r p; do skip="$skip --skip $p"; done <<<"${patterns_of[$name]}"
    echo "${name}${t}${track}${t}${skip# }"
    echo "${name}[on-purpose]${t}${api_off}${track:+ $track}${t}$(tr '\n' ' ' <<<"${patterns_of[$name]}" | sed 's/ $//')"
    return
  fi
  case "$name:$tool" in
    gpu_stress:memcheck)
      # --small: 4 threads, blocks up to 64 KiB; 3000 ops/thread; fixed seed; every resource.
      # pool_async's initial chunk is allocated in stream order on the legacy default stream and,
      # after a context synchronization, handed to streams that worker threads create later;
      # memcheck's stream-ordered race tracking does not see that synchronization as ordering
      # them (reported as "accessed before it is allocated"; see the probe in
      # tests/stress/README.md), so that one resource runs without the tracking, and once more
      # with it and --initial-pool 0, where every chunk is taken on a worker's stream and reaches
      # the other streams through the pool's events.
      echo "gpu_stress${t}${track}${t}--small --ops 3000 --seed 12345 --resource pool,stats_pool,cuda_async,pool_pinned,cuda,managed,pinned"
      echo "gpu_stress[pool_async]${t}${t}--small --ops 3000 --seed 12345 --resource pool_async"
      echo "gpu_stress[pool_async,grow]${t}${track}${t}--small --ops 3000 --seed 12345 --resource pool_async --initial-pool 0"
      ;;
    gpu_stress:racecheck)
      # One host thread: racecheck looks at shared memory inside kernels, which host threads do
      # not change; with 4 threads (cudaFree of the cuda resource racing launches on other
      # threads) it once reported "Internal Sanitizer Error: Detected a failure to track a kernel
      # launch" as its one error.
      echo "gpu_stress${t}${t}--small --threads 1 --seed 12345" ;;
    rmm_exit_child:memcheck|process_exit:memcheck)
      # Keep pools with live blocks until exit on purpose (that is what they test; the Rust
      # process_exit tests run their own binary as such a child): their device memory goes with
      # the process, so the leak check does not apply; memory errors still do.
      echo "${name}${t}${track} --leak-check no${t}$(default_args "$name")" ;;
    *)
      echo "${name}${t}${track}${t}$(default_args "$name")" ;;
  esac
}

# A program's arguments under every tool, unless runs_for says otherwise.
default_args() {
  case $1 in
    gpu_stress) echo "--small --seed 12345" ;;
    stream_reuse_stress) echo "--lifetimes 500 --threads 4 --seed 12345" ;;
    rmm_exit_child) echo "gpu exit" ;;
    *) echo "" ;;
  esac
}

# One run; writes its table row to $LOGS/LABEL.TOOL.row.
run_one() {
  local exe=$1 tool=$2 label=$3 extra=$4 args=$5
  local log start rc ms secs errors api warnings leaks result opts summaries
  log="$LOGS/$label.$tool.log"
  opts="--tool $tool"
  local leakcheck=0
  if [ "$tool" = memcheck ] && [[ "$extra" != *"--leak-check no"* ]]; then
    opts="$opts --leak-check full"; leakcheck=1
  fi
  # One run of a program at a time: two runs of one test binary could share its scratch files.
  if command -v flock >/dev/null; then
    exec {lock}>"$LOCKS/${exe//\//_}"
    flock "$lock"
  fi
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  timeout --kill-after=10 "$TIMEOUT" "$CS" $opts $extra --error-exitcode 99 --print-limit "${PRINT_LIMIT:-20}" \
    "$exe" $args >"$log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  secs=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  api=$(grep -c 'Program hit ' "$log")
  # Each sanitized process (a program that starts itself or another as a child has several)
  # prints its own summary; the counts are summed.
  warnings="-"
  if [ "$tool" = racecheck ]; then
    # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
    summaries=$(grep -oE 'RACECHECK SUMMARY: .*' "$log")
    errors=$(sed -nE 's/.*\(([0-9]+) errors?.*/\1/p' <<<"$summaries" | awk '{s += $1} END {if (NR) print s}')
    warnings=$(sed -nE 's/.* ([0-9]+) warnings?\).*/\1/p' <<<"$summaries" | awk '{s += $1} END {if (NR) print s}')
  else
    # memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | grep -oE '[0-9]+' | awk '{s += $1} END {if (NR) print s}')
  fi
  leaks="-"
  if [ $leakcheck = 1 ]; then
    leaks=$(grep -oE 'LEAK SUMMARY: [0-9]+ bytes leaked in [0-9]+ allocation' "$log" |
            awk '{b += $3; n += $7} END {if (NR) print b "B/" n}')
  fi
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    result=TIMEOUT
  elif grep -q 'no CUDA device' "$log"; then  # skipped: no CUDA device (exit child: ...)
    result=SKIPPED
  elif [ -z "$errors" ] && grep -q 'Target application terminated before first instrumented API call' "$log" \
       && grep -qE '^test result: ok\. [0-9]+ passed; 0 failed' "$log" && ! grep -q '^test result: FAILED' "$log"; then
    result=host  # the program passed without a single CUDA call: nothing for the tool to check
  elif [ -z "$errors" ]; then
    result="FAIL(no summary)"
  elif [ "$errors" != 0 ] || [ "$api" != 0 ]; then
    result=FAIL
  elif [ $leakcheck = 1 ] && [ "${leaks:-none}" != "0B/0" ]; then
    result=FAIL
  elif [ "$tool" = racecheck ] && [ "${warnings:-0}" != 0 ] && { [ $rc -eq 0 ] || [ $rc -eq 99 ]; }; then
    result=warn  # --error-exitcode also fires on warnings
  elif [ $rc -ne 0 ]; then
    result="FAIL(rc=$rc)"
  elif [[ $label == *"[on-purpose]" ]] && grep -qE '^\[==========\] 0 tests from 0 test suites ran|^running 0 tests' "$log"; then
    result="FAIL(no test)"  # the list names tests that are not there (any more)
  else
    result=ok
  fi
  printf '%-30s %-9s %-16s %6s %4s %5s %9s %7s  %s\n' "$label" "$tool" "$result" "${errors:--}" "$api" \
    "${warnings:--}" "${leaks:--}" "$secs" "${args:-(none)}" >"$LOGS/$label.$tool.row"
  cat "$LOGS/$label.$tool.row"
  if [ "$result" != ok ] && [ "$result" != host ]; then
    grep -E '^=========' "$log" | head -30
    tail -5 "$log"
  fi
}

# The plan: EXE|TOOL|LABEL|EXTRA|ARGS per run, tool by tool, so that the runs of one program are
# far apart (run_one also takes a lock per program). A name seen in an earlier folder gets the
# folder's name in its label (LABEL.TOOL names the log).
# A Rust test that reads files at the paths it was built with (benches/replay/tests/replay.rs: env! of
# CARGO_MANIFEST_DIR and friends) runs only where those paths exist; tests/gpu/package.sh records
# them in DIR/.build-paths.
needs_missing_paths() {  # DIR EXE
  [ -f "$1/.build-paths" ] || return 1
  local r t
  r=$(sed -n 's/^repo=//p' "$1/.build-paths")
  t=$(sed -n 's/^target=//p' "$1/.build-paths")
  [ -n "$r" ] && { [ ! -d "$r/tests/data" ] || [ ! -d "$t" ]; } && grep -qaF -e "$r" -e "$t" "$2"
}
programs=()  # EXE|LABEL PREFIX
declare -A seen=()
for dir in "${abs_dirs[@]}"; do
  for exe in "$dir"/*; do
    if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then continue; fi
    name=$(basename "$exe")
    case $name in stream_order_probe) continue ;; esac  # a manual probe (README.md)
    if needs_missing_paths "$dir" "$exe"; then
      echo "run_sanitizers: not run: $name (reads files at the paths of the machine that built it; $dir/.build-paths)"
      continue
    fi
    prefix=""
    [ -n "${seen[$name]:-}" ] && prefix="$(basename "$dir")."
    seen[$name]=1
    programs+=("$exe|$prefix")
  done
done
plan=()
for tool in $TOOLS; do
  for p in "${programs[@]}"; do
    IFS='|' read -r exe prefix <<<"$p"
    while IFS='|' read -r label extra args; do
      plan+=("$exe|$tool|$prefix$label|$extra|$args")
    done < <(runs_for "$(basename "$exe")" "$tool" "$exe")
  done
done
for prog in "${!listed[@]}"; do
  [ -n "${seen[$prog]:-}" ] ||
    echo "run_sanitizers: note: $(basename "$FAILING_LIST") lists $prog, which is in none of ${abs_dirs[*]}"
done
[ ${#plan[@]} -gt 0 ] || { echo "run_sanitizers: no programs in ${abs_dirs[*]}" >&2; exit 2; }

if [ $list_only = 1 ]; then
  printf '%-30s %-9s %-50s %s\n' run tool "sanitizer options" args
  for p in "${plan[@]}"; do
    IFS='|' read -r exe tool label extra args <<<"$p"
    opts=$extra
    [ "$tool" = memcheck ] && [[ "$extra" != *"--leak-check no"* ]] && opts="--leak-check full${extra:+ $extra}"
    printf '%-30s %-9s %-50s %s\n' "$label" "$tool" "${opts:-(none)}" "${args:-(none)}"
  done
  echo "run_sanitizers: ${#plan[@]} runs planned (${abs_dirs[*]}; TOOLS=$TOOLS; failing list $FAILING_LIST)"
  exit 0
fi

mkdir -p "$LOGS" || exit 2
# The per-program locks live apart from the logs, so that $LOGS holds only what a reader wants.
LOCKS=$(mktemp -d) || exit 2
trap 'rm -rf "$LOCKS"' EXIT
"$CS" --version | tail -1
rm -f "$LOGS"/*.row
for p in "${plan[@]}"; do
  IFS='|' read -r exe tool label extra args <<<"$p"
  # At most $JOBS runs at once.
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_one "$exe" "$tool" "$label" "$extra" "$args" &
done
wait

echo
echo "compute-sanitizer over ${abs_dirs[*]}: errors = the tool's error summary; api = CUDA API errors;"
echo "warn = racecheck warnings; leaks = bytes/allocations at exit (memcheck --leak-check full);"
echo "memcheck with '$TRACK' unless a note in runs_for says otherwise; [on-purpose]: runs of"
echo "$(basename "$FAILING_LIST") with --report-api-errors no; RMM_MODEL_OPS=$RMM_MODEL_OPS;"
echo "limit ${TIMEOUT}s a run, $JOBS at a time"
printf '%-30s %-9s %-16s %6s %4s %5s %9s %7s  %s\n' run tool result errors api warn leaks seconds args
cat "$LOGS"/*.row
runs=$(cat "$LOGS"/*.row | wc -l)
warned=$(awk '$3 == "warn"' "$LOGS"/*.row | wc -l)
failed=$(awk '$3 != "ok" && $3 != "warn" && $3 != "host"' "$LOGS"/*.row | wc -l)
echo "run_sanitizers: $runs runs, $((runs - warned - failed)) ok, $warned warn, $failed failed"
[ "$failed" -eq 0 ] && [ "$runs" -eq ${#plan[@]} ]
