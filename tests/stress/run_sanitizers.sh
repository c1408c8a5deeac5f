#!/usr/bin/env bash
# Runs every program in a bin folder (default build/cpp/bin: the examples, rmm_cpp_tests and
# gpu_stress) under compute-sanitizer memcheck (--leak-check full, and stream-ordered race
# tracking where the sanitizer has it), racecheck and synccheck, each with a time limit and
# --error-exitcode, and prints one table: run x tool -> result, errors, API errors, racecheck
# warnings, leaks, seconds, arguments. Needs a GPU (the GPU machine); logs go to $LOGS.
#
#   bash tests/stress/run_sanitizers.sh [BIN_DIR]
#
# Environment:
#   COMPUTE_SANITIZER  the sanitizer (default: compute-sanitizer on PATH, else /usr/local/cuda/bin)
#   TOOLS              which tools (default "memcheck racecheck synccheck")
#   SANITIZER_TIMEOUT  seconds per run (default 300)
#   LOGS               where each run's log goes (default /tmp/sanitizer-logs)
#   JOBS               runs at once (default 1; they share the GPU, so their times then overlap)
#
# Result: ok (no error, no leak, exit 0), warn (racecheck warnings only: possible hazards the tool
# cannot rule out, listed in the log), FAIL, TIMEOUT. The exit status is non-zero when any run is
# neither ok nor warn. Sizes are reduced where a program allows it (runs_for below); the table's
# last column shows the arguments each run got.
set -u

BIN=${1:-build/cpp/bin}
TOOLS=${TOOLS:-memcheck racecheck synccheck}
TIMEOUT=${SANITIZER_TIMEOUT:-300}
LOGS=${LOGS:-/tmp/sanitizer-logs}
JOBS=${JOBS:-1}
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}

if [ ! -x "$CS" ]; then
  echo "run_sanitizers: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
  exit 2
fi
mkdir -p "$LOGS"
TRACK=""
if "$CS" --help 2>/dev/null | grep -q -- '--track-stream-ordered-races'; then
  TRACK="--track-stream-ordered-races all"
fi

# The runs of one program under one tool, one per line: LABEL|EXTRA SANITIZER OPTIONS|ARGS.
runs_for() {
  local name=$1 tool=$2 t='|'
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
      echo "gpu_stress${t}${TRACK}${t}--small --ops 3000 --seed 12345 --resource pool,stats_pool,cuda_async,pool_pinned,cuda,managed,pinned"
      echo "gpu_stress[pool_async]${t}${t}--small --ops 3000 --seed 12345 --resource pool_async"
      echo "gpu_stress[pool_async,grow]${t}${TRACK}${t}--small --ops 3000 --seed 12345 --resource pool_async --initial-pool 0"
      ;;
    gpu_stress:racecheck)
      # One host thread: racecheck looks at shared memory inside kernels, which host threads do
      # not change; with 4 threads (cudaFree of the cuda resource racing launches on other
      # threads) it once reported "Internal Sanitizer Error: Detected a failure to track a kernel
      # launch" as its one error.
      echo "gpu_stress${t}${t}--small --threads 1 --seed 12345" ;;
    gpu_stress:*)
      echo "gpu_stress${t}${t}--small --seed 12345" ;;
    rmm_cpp_tests:memcheck)
      # Some tests make CUDA calls fail on purpose (more bytes than the device has, bad arguments),
      # which memcheck reports as API errors: they run on their own with API error reporting off.
      # ProcessExit.* starts rmm_exit_child, which is swept on its own below.
      local failing='ResourceErrors.HugeAllocationIsOutOfMemory:BadInputOnGpu.MoreThanTheDeviceHasIsOutOfMemory:BadInputOnGpu.CudaResourcesRefuseBadArguments'
      echo "rmm_cpp_tests${t}${TRACK}${t}--gtest_filter=-${failing}:ProcessExit.*"
      echo "rmm_cpp_tests[oom]${t}--report-api-errors no${t}--gtest_filter=${failing}"
      ;;
    rmm_cpp_tests:*)
      echo "rmm_cpp_tests${t}${t}--gtest_filter=-ProcessExit.*" ;;
    rmm_exit_child:memcheck)
      # Keeps pools with live blocks until exit() on purpose (that is what it tests): their device
      # memory goes with the process, so the leak check does not apply; memory errors still do.
      echo "rmm_exit_child${t}${TRACK} --leak-check no${t}gpu exit" ;;
    rmm_exit_child:*)
      echo "rmm_exit_child${t}${t}gpu exit" ;;
    *:memcheck)
      echo "${name}${t}${TRACK}${t}" ;;
    *)
      echo "${name}${t}${t}" ;;
  esac
}

# One run; writes its table row to $LOGS/LABEL.TOOL.row.
run_one() {
  local exe=$1 tool=$2 label=$3 extra=$4 args=$5
  local log start rc ms secs errors api warnings leaks result opts
  log="$LOGS/$label.$tool.log"
  opts="--tool $tool"
  local leakcheck=0
  if [ "$tool" = memcheck ] && [[ "$extra" != *"--leak-check no"* ]]; then
    opts="$opts --leak-check full"; leakcheck=1
  fi
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  timeout --kill-after=10 "$TIMEOUT" "$CS" $opts $extra --error-exitcode 99 --print-limit 20 \
    "$exe" $args >"$log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  secs=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  api=$(grep -c 'Program hit ' "$log")
  warnings="-"
  if [ "$tool" = racecheck ]; then
    # racecheck prints "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
    errors=$(grep -oE 'RACECHECK SUMMARY: .*\(([0-9]+) errors?' "$log" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' | tail -1)
    warnings=$(grep -oE '[0-9]+ warnings?\)' "$log" | grep -oE '[0-9]+' | tail -1)
  else
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | grep -oE '[0-9]+' | tail -1)
  fi
  leaks="-"
  if [ $leakcheck = 1 ]; then
    leaks=$(grep -oE 'LEAK SUMMARY: [0-9]+ bytes leaked in [0-9]+ allocation' "$log" |
            awk '{print $3 "B/" $7}' | tail -1)
  fi
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    result=TIMEOUT
  elif grep -q '^skipped: no CUDA device' "$log"; then
    result=SKIPPED
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
  else
    result=ok
  fi
  printf '%-28s %-9s %-16s %6s %4s %5s %9s %7s  %s\n' "$label" "$tool" "$result" "${errors:--}" "$api" \
    "${warnings:--}" "${leaks:--}" "$secs" "${args:-(none)}" >"$LOGS/$label.$tool.row"
  cat "$LOGS/$label.$tool.row"
  if [ "$result" != ok ]; then
    grep -E '^=========' "$log" | head -30
    tail -5 "$log"
  fi
}

"$CS" --version | tail -1
rm -f "$LOGS"/*.row
for exe in "$BIN"/*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name=$(basename "$exe")
  for tool in $TOOLS; do
    while IFS='|' read -r label extra args; do
      # At most $JOBS runs at once.
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
      run_one "$exe" "$tool" "$label" "$extra" "$args" &
    done < <(runs_for "$name" "$tool")
  done
done
wait

echo
echo "compute-sanitizer over $BIN: errors = the tool's error summary; api = CUDA API errors;"
echo "warn = racecheck warnings; leaks = bytes/allocations at exit (memcheck --leak-check full);"
echo "memcheck with '$TRACK' unless a note in runs_for says otherwise; limit ${TIMEOUT}s a run, $JOBS at a time"
printf '%-28s %-9s %-16s %6s %4s %5s %9s %7s  %s\n' run tool result errors api warn leaks seconds args
cat "$LOGS"/*.row
runs=$(cat "$LOGS"/*.row | wc -l)
warned=$(awk '$3 == "warn"' "$LOGS"/*.row | wc -l)
failed=$(awk '$3 != "ok" && $3 != "warn"' "$LOGS"/*.row | wc -l)
echo "run_sanitizers: $runs runs, $((runs - warned - failed)) ok, $warned warn, $failed failed"
[ "$failed" -eq 0 ]
