#!/usr/bin/env bash
# rmm-rs against RMM 26.10, side by side: one benchmark source (benches/cpp/alloc_bench.cu) built
# twice, run twice, one table. Likewise benches/cpp/replay.cu, which replays allocation logs
# (tests/data/logs/*.csv) against pool_memory_resource and reports peak upstream bytes.
#
#   bash benches/run_side_by_side.sh build   # here (no GPU needed): all binaries and logs into .bench/
#   bash benches/run_side_by_side.sh run     # on the GPU host: run both (alloc_bench + replay), table
#   bash benches/run_side_by_side.sh replay  # on the GPU host: only the log replays, their table
#   bash benches/run_side_by_side.sh rounds  # on the GPU host: only the alternating rounds (ROUNDS)
#   bash benches/run_side_by_side.sh threads # on the GPU host: the threads matrix (every resource,
#                                            # stream pattern and thread count), both sides in
#                                            # alternating rounds (THREAD_ROUNDS), table and plots
#   bash benches/run_side_by_side.sh table   # the table again from the CSVs of the last run
#   bash benches/run_side_by_side.sh selftest  # here: the workload logic against a fake resource
#
# build also makes stream_reuse_stress_rmm_rs and stream_reuse_stress_rmm_26_10 (tests/stress/
# stream_reuse_stress.cu on both sides): run each on the GPU host to compare how the two pools
# treat the blocks of streams destroyed with work queued.
#
# build needs: cargo (for librmm_cpp.a), nvcc 13.0 + CCCL 3.5 (.venv-cuda, see .ci/install-toolchain.sh,
# or CUDA_HOME), and network for `pip download` of the RMM 26.10 wheels unless RMM_WHEEL_DIR
# already holds them. It writes .bench/ (the binaries and RMM's two .so files beside them; copy
# this folder to the GPU host) and build/bench/ (wheels, objects).
#
# run needs only the .bench/ folder, python3 (and matplotlib for the plot, optional): no cargo, pip
# or network. It writes the results to $RESULTS_DIR (default: $OUT when set, else
# .bench/results): rmm-rs.csv, rmm-26.10.csv, raw.csv (the CUDA/Thrust baselines),
# replay-rmm-rs.csv, replay-rmm-26.10.csv (replay.cu on both sides), replay-rmm-rs-native.csv (the
# Rust rmm_replay, pool over cuda), side_by_side.csv, side_by_side.txt, threads_pool.png,
# run_threads_own.svg, rounds.csv and rounds.txt (the rows the targets name, both sides
# alternating, ROUNDS times). `threads` writes threads_rounds.csv, threads_table.txt / .csv / .md
# and threads_<pattern>.svg there (see threads_matrix below).
#
# The logs replayed are .bench/logs/*.csv: build copies tests/data/logs/*.csv there and writes the
# whole fixed trace (alloc_bench's fixed_trace, 200k operations) as random_200k.csv with
# `rmm_replay generate`.
# Add any RMM log there (ours or RMM's logging_resource_adaptor) to replay it too.
#
# Environment (all optional):
#   CUDA_HOME         toolkit root (nvcc in bin/, cudart in lib/ or lib64/, CCCL in include/cccl)
#   CARGO_TARGET_DIR  where cargo puts librmm_cpp.a and the cxx bridge headers (default: target)
#   RMM_WHEEL_DIR     folder holding librmm_cu13-26.10.0*.whl and rapids_logger*.whl
#   ARCH              GPU architecture (default sm_90, the H100)
#   BENCH_ARGS        extra arguments for both alloc_bench runs (e.g. "--budget-s 2", "--quick")
#   RUN_PATTERNS      run: the threads workload's stream patterns in the single pass (default own)
#   ROUNDS            alternating rounds of the target rows after the main runs (default 6)
#   REPLAY_ARGS       extra arguments for every replay run (e.g. "--initial-pool 1G", "--runs 11")
#   BENCH_CPU         the CPU every process of the rounds is pinned to (default 2)
#   RESULTS_DIR       see above
#   THREAD_ROUNDS     threads: alternating rounds (default 4)
#   THREADS_BUDGET_S  threads: alloc_bench's --budget-s; a run is cut off after 4 times this
#                     (default 0.2: the whole default matrix, both sides, 4 rounds in about 7 minutes)
#   THREADS_RESOURCES threads: resources (default pool,arena,fixed_size,binning,cuda_async,
#                     stats_tracking_pool)
#   THREADS_PATTERNS  threads: stream patterns (default own,shared,ptds)
#   THREADS_COUNTS    threads: thread counts (default 1,2,4,8,16)
#   THREADS_MAX_S     threads: no round is started that would end (at the average round's time)
#                     past this many seconds (default 540); the table covers the rounds done
#   BENCH_THREAD_CPUS threads: the CPUs (a taskset list) every process is pinned to (default: the
#                     CPUs local to GPU 0, from sysfs; unpinned where those cannot be found)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="$REPO/.bench"
WORK="$REPO/build/bench"
ARCH="${ARCH:-sm_90}"
RMM_VERSION=26.10.0
OURS=alloc_bench_rmm_rs
THEIRS=alloc_bench_rmm_26_10
REPLAY_OURS=replay_rmm_rs
REPLAY_THEIRS=replay_rmm_26_10
NATIVE=rmm_replay

die() { echo "run_side_by_side: $*" >&2; exit 1; }

# shellcheck source=benches/cuda_home.sh
source "$REPO/benches/cuda_home.sh"

# The RMM 26.10 wheels, unpacked into $WORK/rmm (librmm/ and rapids_logger/).
fetch_rmm() {
  local dest="$WORK/rmm"
  if [ -f "$dest/librmm/lib64/librmm.so" ] && [ -f "$dest/rapids_logger/lib64/librapids_logger.so" ]; then
    return
  fi
  local wheels="${RMM_WHEEL_DIR:-$WORK/wheels}"
  if ! ls "$wheels"/librmm_cu13-"$RMM_VERSION"-*.whl >/dev/null 2>&1 || ! ls "$wheels"/rapids_logger-*.whl >/dev/null 2>&1; then
    [ -z "${RMM_WHEEL_DIR:-}" ] || die "RMM_WHEEL_DIR=$RMM_WHEEL_DIR lacks the librmm-cu13 $RMM_VERSION or rapids-logger wheel"
    echo "== pip download librmm-cu13==$RMM_VERSION rapids-logger"
    mkdir -p "$wheels"
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.12 --platform manylinux_2_28_x86_64 \
      "librmm-cu13==$RMM_VERSION" rapids-logger -d "$wheels"
  fi
  rm -rf "$dest" && mkdir -p "$dest"
  local w
  for w in "$wheels"/librmm_cu13-"$RMM_VERSION"-*.whl "$wheels"/rapids_logger-*.whl; do
    python3 -m zipfile -e "$w" "$dest"
  done
}

build() {
  local cuda_home nvcc target cccl
  cuda_home="$(find_cuda_home)"
  nvcc="$cuda_home/bin/nvcc"
  cccl="${CCCL_INCLUDE:-$cuda_home/include/cccl}"
  target="${CARGO_TARGET_DIR:-$REPO/target}"
  case "$target" in /*) ;; *) target="$REPO/$target" ;; esac
  "$nvcc" --version | grep -q 'release 13\.0' || echo "warning: $("$nvcc" --version | tail -1): the benchmark pages used 13.0" >&2

  echo "== cargo build --release (librmm_cpp.a, rmm_replay)"
  CARGO_TARGET_DIR="$target" cargo build --release --quiet --manifest-path "$REPO/Cargo.toml"
  fetch_rmm

  mkdir -p "$WORK/obj" "$BUNDLE"
  local rmm="$WORK/rmm"
  # The same CCCL configuration on both sides, so that Thrust runs the same kernels: the flags RMM
  # 26.10's wheel needs (its CCCL is built without the namespace magic and without PDL) are
  # harmless for ours. Each side gets its own CCCL 3.5 first on the include path: the wheel's
  # (include/rapids) for RMM, the toolkit's for ours.
  local common=(-std=c++20 -O2 -arch="$ARCH" -Xcompiler=-Wall
                -DCUB_DISABLE_NAMESPACE_MAGIC -DCUB_IGNORE_NAMESPACE_MAGIC_ERROR
                -DTHRUST_DISABLE_ABI_NAMESPACE -DTHRUST_IGNORE_ABI_NAMESPACE_ERROR -DCCCL_DISABLE_PDL)

  # build_pair SOURCE OURS_NAME THEIRS_NAME: compiles SOURCE against both (in parallel), links
  # both into $WORK.
  build_pair() {
    local src="$1" ours="$2" theirs="$3"
    echo "== nvcc: $ours and $theirs (in parallel)"
    "$nvcc" "${common[@]}" -DRMM_BENCH_IMPL='"rmm-rs"' \
      -I"$cccl" -I"$REPO/include" -I"$target/cxxbridge" \
      -c "$src" -o "$WORK/obj/$ours.o" &
    local ours_pid=$!
    "$nvcc" "${common[@]}" -DRMM_BENCH_IMPL='"rmm-26.10"' \
      -I"$rmm/librmm/include/rapids" -I"$rmm/librmm/include" -I"$rmm/rapids_logger/include" \
      -c "$src" -o "$WORK/obj/$theirs.o" &
    local theirs_pid=$!
    wait "$ours_pid" || die "compiling $ours failed"
    wait "$theirs_pid" || die "compiling $theirs failed"

    # Ours: the Rust staticlib, static cudart (nvcc's default). Theirs: librmm.so and
    # librapids_logger.so beside the binary ($ORIGIN; librmm.so finds the logger the same way).
    "$nvcc" -arch="$ARCH" "$WORK/obj/$ours.o" -o "$WORK/$ours" \
      "$target/release/librmm_cpp.a" -lpthread -ldl -L"$cuda_home/lib" -L"$cuda_home/lib64"
    "$nvcc" -arch="$ARCH" "$WORK/obj/$theirs.o" -o "$WORK/$theirs" \
      -L"$cuda_home/lib" -L"$cuda_home/lib64" -L"$rmm/librmm/lib64" -L"$rmm/rapids_logger/lib64" \
      -lrmm -lrapids_logger -Xlinker -rpath -Xlinker '$ORIGIN'
    rm -f "$BUNDLE/$ours" "$BUNDLE/$theirs"
    strip -o "$BUNDLE/$ours" "$WORK/$ours"
    strip -o "$BUNDLE/$theirs" "$WORK/$theirs"
  }
  build_pair "$REPO/benches/cpp/alloc_bench.cu" "$OURS" "$THEIRS"
  build_pair "$REPO/benches/cpp/replay.cu" "$REPLAY_OURS" "$REPLAY_THEIRS"
  # The stream-reuse stress against both: RMM's pool keys its free lists by stream handle, which
  # the driver gives to the next stream it creates.
  build_pair "$REPO/tests/stress/stream_reuse_stress.cu" stream_reuse_stress_rmm_rs stream_reuse_stress_rmm_26_10

  rm -f "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so" "$BUNDLE/$NATIVE"
  cp "$rmm/librmm/lib64/librmm.so" "$rmm/rapids_logger/lib64/librapids_logger.so" "$BUNDLE/"
  strip --strip-unneeded "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so"
  chmod 755 "$BUNDLE/librmm.so" "$BUNDLE/librapids_logger.so"
  strip -o "$BUNDLE/$NATIVE" "$target/release/$NATIVE"

  # The logs: the committed ones, and the whole fixed trace.
  rm -rf "$BUNDLE/logs" && mkdir -p "$BUNDLE/logs"
  cp "$REPO"/tests/data/logs/*.csv "$BUNDLE/logs/"
  "$BUNDLE/$NATIVE" generate random "$BUNDLE/logs/random_200k.csv" --ops 200000

  echo "== $BUNDLE"
  (cd "$BUNDLE" && ls -l "$OURS" "$THEIRS" "$REPLAY_OURS" "$REPLAY_THEIRS" "$NATIVE" librmm.so librapids_logger.so logs \
     && du -ch "$OURS" "$THEIRS" "$REPLAY_OURS" "$REPLAY_THEIRS" "$NATIVE" librmm.so librapids_logger.so logs | tail -1)
  # All must start here: without a GPU they print "skipped: no CUDA device" and exit 0.
  "$BUNDLE/$OURS" && "$BUNDLE/$THEIRS" || die "a binary does not start here"
  "$BUNDLE/$REPLAY_OURS" "$BUNDLE"/logs/*.csv && "$BUNDLE/$REPLAY_THEIRS" "$BUNDLE"/logs/*.csv || die "a replay binary does not start here"
  # The three log readers (C++ on both sides, Rust) must agree on every log.
  local check="$WORK/replay-check"
  mkdir -p "$check"
  "$BUNDLE/$REPLAY_OURS" --check "$BUNDLE"/logs/*.csv > "$check/ours.csv" || die "$REPLAY_OURS --check failed"
  "$BUNDLE/$REPLAY_THEIRS" --check "$BUNDLE"/logs/*.csv > "$check/theirs.csv" || die "$REPLAY_THEIRS --check failed"
  "$BUNDLE/$NATIVE" --check "$BUNDLE"/logs/*.csv > "$check/native.csv" || die "$NATIVE --check failed"
  local f
  for f in ours theirs native; do grep -v '^#' "$check/$f.csv" | cut -d, -f3- > "$check/$f.values"; done
  cmp -s "$check/ours.values" "$check/theirs.values" && cmp -s "$check/ours.values" "$check/native.values" \
    || die "the log readers disagree: see $check/*.csv"
  echo "== log readers agree on $(ls "$BUNDLE"/logs/*.csv | wc -l) logs (ops, peak_live_bytes)"
}

# The workload logic (traces, replay, RMM's random loop) against a host-side shadow resource.
selftest() {
  local cuda_home nvcc target
  cuda_home="$(find_cuda_home)"
  nvcc="$cuda_home/bin/nvcc"
  target="${CARGO_TARGET_DIR:-$REPO/target}"
  case "$target" in /*) ;; *) target="$REPO/$target" ;; esac
  CARGO_TARGET_DIR="$target" cargo build --release --quiet --manifest-path "$REPO/Cargo.toml"
  mkdir -p "$WORK"
  "$nvcc" -std=c++20 -O2 -arch="$ARCH" -DRMM_BENCH_IMPL='"rmm-rs"' \
    -I"${CCCL_INCLUDE:-$cuda_home/include/cccl}" -I"$REPO/include" -I"$target/cxxbridge" \
    "$REPO/benches/cpp/alloc_bench_selftest.cu" -o "$WORK/alloc_bench_selftest" \
    "$target/release/librmm_cpp.a" -lpthread -ldl -L"$cuda_home/lib" -L"$cuda_home/lib64"
  "$WORK/alloc_bench_selftest"
}

# Runs one binary, its CSV to $1, its log to $1.log; returns its exit status.
run_one() {
  local csv="$1"
  shift
  echo "== $*" >&2
  local status=0
  "$@" > "$csv" 2> "$csv.log" || status=$?
  awk -F, '!/^#/ && NF == 6 && $5 ~ /^[0-9.eE+-]+$/ {n++} END {printf "   %d results\n", n}' "$csv" >&2
  grep -E ',(error|timeout),' "$csv" >&2 || true
  [ "$status" -eq 0 ] || { echo "   exit status $status; stderr:" >&2; tail -5 "$csv.log" >&2; }
  return "$status"
}

run() {
  local dir="${RESULTS_DIR:-${OUT:-$BUNDLE/results}}"
  mkdir -p "$dir"
  [ -x "$BUNDLE/$OURS" ] && [ -x "$BUNDLE/$THEIRS" ] || die "no binaries in $BUNDLE: run 'build' first (on the build machine)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader || true
  # The single pass runs the threads workload in the stream-per-thread pattern only (RUN_PATTERNS):
  # `threads` runs every pattern, in rounds, within a budget.
  local args=(--patterns "${RUN_PATTERNS:-own}")
  # shellcheck disable=SC2206
  [ -z "${BENCH_ARGS:-}" ] || args+=($BENCH_ARGS)
  local failed=0
  # One implementation at a time, each in its own process; the raw CUDA / Thrust baselines once
  # (from our binary; they do not touch rmm::).
  run_one "$dir/rmm-26.10.csv" "$BUNDLE/$THEIRS" "${args[@]}" || failed=1
  run_one "$dir/rmm-rs.csv" "$BUNDLE/$OURS" "${args[@]}" || failed=1
  run_one "$dir/raw.csv" "$BUNDLE/$OURS" --baselines \
    --resources cudaMallocAsync,cudaMalloc,thrust_default,preallocated "${args[@]}" || failed=1
  run_replays "$dir" || failed=1
  table "$dir" || failed=1
  rounds "$dir" || failed=1
  if grep -q '^skipped: no CUDA device' "$dir/rmm-rs.csv"; then
    echo "skipped: no CUDA device"
    return 0
  fi
  if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$REPO/benches/plot.py" "$dir/side_by_side.csv" -o "$dir/threads_pool.png" || failed=1
  else
    echo "(no matplotlib: no PNG plot)"
  fi
  python3 "$REPO/benches/plot_threads.py" "$dir/side_by_side.csv" -o "$dir" --prefix run_threads_ || failed=1
  [ "$failed" -eq 0 ] || die "a benchmark failed (see the .log files in $dir)"
}

# The log replays: replay.cu on both sides, then the Rust rmm_replay (pool over cuda).
run_replays() {
  local dir="$1"
  [ -x "$BUNDLE/$REPLAY_OURS" ] && [ -x "$BUNDLE/$REPLAY_THEIRS" ] || die "no replay binaries in $BUNDLE: run 'build' first"
  local logs=("$BUNDLE"/logs/*.csv)
  [ -e "${logs[0]}" ] || die "no logs in $BUNDLE/logs: run 'build' first"
  local args=()
  # shellcheck disable=SC2206
  [ -z "${REPLAY_ARGS:-}" ] || args=($REPLAY_ARGS)
  local failed=0
  run_one "$dir/replay-rmm-26.10.csv" "$BUNDLE/$REPLAY_THEIRS" "${args[@]}" "${logs[@]}" || failed=1
  run_one "$dir/replay-rmm-rs.csv" "$BUNDLE/$REPLAY_OURS" "${args[@]}" "${logs[@]}" || failed=1
  if [ -x "$BUNDLE/$NATIVE" ]; then
    run_one "$dir/replay-rmm-rs-native.csv" "$BUNDLE/$NATIVE" --resource pool --upstream cuda \
      "${args[@]}" "${logs[@]}" || failed=1
  fi
  return "$failed"
}

replay() {
  local dir="${RESULTS_DIR:-${OUT:-$BUNDLE/results}}"
  mkdir -p "$dir"
  local failed=0
  run_replays "$dir" || failed=1
  python3 "$REPO/benches/combine.py" "$dir/replay-rmm-rs.csv" "$dir/replay-rmm-26.10.csv" \
    --csv "$dir/replay_side_by_side.csv" | tee "$dir/replay_side_by_side.txt" || failed=1
  if [ -f "$dir/replay-rmm-rs-native.csv" ]; then
    echo
    echo "rmm_replay (Rust, pool over cuda):"
    grep -E '^#|,(ns_per_op|peak_upstream_bytes|fragmentation)$' "$dir/replay-rmm-rs-native.csv" || true
  fi
  [ "$failed" -eq 0 ] || die "a replay failed (see the .log files in $dir)"
}

# Alternating rounds: on a shared machine one pass of each side says little, so the rows the
# allocation targets name run again, RMM and ours in fresh processes one after the other, ROUNDS
# times (default 6; FIXED_ROUNDS is read too; who goes first alternates between rounds):
# the pool's fixed trace and Thrust calls,
# cuda_async's fixed trace and random_allocations, cuda's fixed trace. The driver's own
# cudaMallocAsync / cudaMalloc run in each round too, beside the resources built on them. Writes
# rounds.csv (every value of every round) and prints, per row, the medians and the median of the
# per-round ratios.
rounds() {
  local dir="$1" n="${ROUNDS:-${FIXED_ROUNDS:-6}}" r group side
  local csv="$dir/rounds.csv"
  grep -q '^skipped: no CUDA device' "$dir/rmm-rs.csv" && return 0
  echo "round,impl,resource,workload,param,value,unit" > "$csv"
  # resource|workloads|raw baseline (run from our binary)
  local groups=("pool|fixed_trace,thrust|" "cuda_async|fixed_trace,random_allocations|cudaMallocAsync"
                "cuda|fixed_trace|cudaMalloc")
  # Every process of the rounds runs on one CPU (BENCH_CPU, default 2), where taskset exists: on
  # the H100 machine an unpinned process's placement moved cudaMallocAsync's cost by up to 40 %
  # from one process to the next, pinned ones back to back agreed within a few per cent.
  # Where that CPU does not exist (a machine with fewer), the rounds run unpinned rather than not at all.
  local pin=()
  if command -v taskset >/dev/null && taskset -c "${BENCH_CPU:-2}" true 2>/dev/null; then
    pin=(taskset -c "${BENCH_CPU:-2}")
  fi
  # keep_round R: the numeric result rows of one run (standard input), prefixed with R, into the CSV.
  keep_round() { awk -F, -v r="$1" '!/^#/ && NF == 6 && $5 ~ /^[0-9.eE+-]+$/ {print r "," $0}' >> "$csv"; }
  for r in $(seq 1 "$n"); do
    for group in "${groups[@]}"; do
      IFS='|' read -r resource workloads raw <<< "$group"
      # Who goes first alternates: a process can inherit a busy or a freshly emptied device.
      local order=("$THEIRS" "$OURS")
      [ $((r % 2)) -eq 0 ] && order=("$OURS" "$THEIRS")
      for side in "${order[@]}"; do
        "${pin[@]}" "$BUNDLE/$side" --only "$workloads" --resources "$resource" 2>> "$dir/rounds.log" | keep_round "$r"
      done
      if [ -n "$raw" ]; then
        "${pin[@]}" "$BUNDLE/$OURS" --baselines --only "$workloads" --resources "$raw" 2>> "$dir/rounds.log" |
          keep_round "$r"
      fi
    done
  done
  python3 "$REPO/benches/rounds.py" "$csv" | tee "$dir/rounds.txt"
}

# The CPUs local to GPU 0 (its NUMA node's, from sysfs), as a taskset list; empty where unknown.
gpu_local_cpus() {
  local bus
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1 | tr 'A-F' 'a-f') || return 0
  # nvidia-smi prints 00000000:19:00.0, sysfs names it 0000:19:00.0.
  bus=${bus#0000}
  [ -n "$bus" ] && [ -r "/sys/bus/pci/devices/$bus/local_cpulist" ] && cat "/sys/bus/pci/devices/$bus/local_cpulist"
  return 0
}

# The threads matrix: every resource, stream pattern and thread count, RMM and ours in fresh
# processes one after the other (one process per resource and side; who goes first alternates
# between rounds and between resources), THREAD_ROUNDS times. Threads need CPUs of their own, so
# every process is pinned to the same set of several CPUs: the GPU's local ones (BENCH_THREAD_CPUS).
# Cut-off runs are kept as lower bounds (">X"). Writes threads_rounds.csv (every row of every
# round), threads_table.txt / .csv / .md (medians, ratios of the per-round ratios) and
# threads_<pattern>.svg (ns per operation against thread count, ours solid, RMM dashed).
threads_matrix() {
  local dir="$1" n="${THREAD_ROUNDS:-4}" budget="${THREADS_BUDGET_S:-0.2}" r i side resource
  local resources patterns counts csv="$dir/threads_rounds.csv" log="$dir/threads_rounds.log"
  resources="${THREADS_RESOURCES:-pool,arena,fixed_size,binning,cuda_async,stats_tracking_pool}"
  patterns="${THREADS_PATTERNS:-own,shared,ptds}"
  counts="${THREADS_COUNTS:-1,2,4,8,16}"
  [ -x "$BUNDLE/$OURS" ] && [ -x "$BUNDLE/$THEIRS" ] || die "no binaries in $BUNDLE: run 'build' first (on the build machine)"
  if "$BUNDLE/$OURS" --only threads --resources none | grep -q '^skipped: no CUDA device'; then
    echo "skipped: no CUDA device"
    return 0
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader || true
  local cpus="${BENCH_THREAD_CPUS:-$(gpu_local_cpus)}" pin=()
  if [ -n "$cpus" ] && command -v taskset >/dev/null && taskset -c "$cpus" true 2>/dev/null; then
    pin=(taskset -c "$cpus")
  fi
  echo "== threads: $n rounds, budget $budget s (cut-off $(python3 -c "print(4 * $budget)") s), resources $resources," \
       "patterns $patterns, threads $counts, CPUs ${cpus:-all (unpinned)}" >&2
  echo "round,impl,resource,workload,param,value,unit" > "$csv"
  : > "$log"
  local start=$SECONDS list cells
  IFS=',' read -r -a list <<< "$resources"
  # A process that hangs (a thread stuck inside the allocator) is killed after every one of its
  # runs could have gone to its cut-off, and a margin; the round goes on.
  cells=$(( $(tr ',' '\n' <<< "$patterns" | grep -c .) * $(tr ',' '\n' <<< "$counts" | grep -c .) ))
  local process_limit
  process_limit=$(python3 -c "print(int($cells * (4 * $budget + 1) + 30))")
  for r in $(seq 1 "$n"); do
    i=0
    for resource in "${list[@]}"; do
      local order=("$THEIRS" "$OURS")
      [ $(((r + i) % 2)) -eq 0 ] && order=("$OURS" "$THEIRS")
      for side in "${order[@]}"; do
        timeout --kill-after=5 "$process_limit" "${pin[@]}" "$BUNDLE/$side" --only threads --resources "$resource" \
          --patterns "$patterns" --threads "$counts" --budget-s "$budget" 2>> "$log" |
          awk -F, -v r="$r" '!/^#/ && NF == 6 && ($5 ~ /^[0-9.eE+-]+$/ || $5 == "timeout" || $5 == "error") {print r "," $0}' >> "$csv" ||
          echo "   round $r $side $resource: exit status $? (see $log)" >&2
      done
      i=$((i + 1))
    done
    echo "   round $r done after $((SECONDS - start)) s" >&2
    # Stop early rather than be killed: the next round would end past THREADS_MAX_S.
    if [ "$r" -lt "$n" ] && [ $((SECONDS - start + (SECONDS - start) / r)) -gt "${THREADS_MAX_S:-540}" ]; then
      echo "   stopping after $r of $n rounds: another would end past THREADS_MAX_S=${THREADS_MAX_S:-540} s" >&2
      break
    fi
  done
  python3 "$REPO/benches/rounds.py" "$csv" --csv "$dir/threads_table.csv" --markdown "$dir/threads_table.md" |
    tee "$dir/threads_table.txt"
  python3 "$REPO/benches/plot_threads.py" "$dir/threads_table.csv" -o "$dir"
  echo "== threads: $((SECONDS - start)) s in all; results in $dir" >&2
  ! grep -q ',error,' "$csv" || die "a threads run failed (see $csv and $log)"
}

table() {
  local dir="${1:-${RESULTS_DIR:-${OUT:-$BUNDLE/results}}}"
  local inputs=("$dir/rmm-rs.csv" "$dir/rmm-26.10.csv" "$dir/raw.csv")
  [ -f "$dir/replay-rmm-rs.csv" ] && inputs+=("$dir/replay-rmm-rs.csv" "$dir/replay-rmm-26.10.csv")
  python3 "$REPO/benches/combine.py" "${inputs[@]}" --csv "$dir/side_by_side.csv" | tee "$dir/side_by_side.txt"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  replay) replay ;;
  rounds) d="${RESULTS_DIR:-${OUT:-$BUNDLE/results}}"; mkdir -p "$d"; rounds "$d" || die "a round failed (see $d/rounds.log)" ;;
  threads) d="${RESULTS_DIR:-${OUT:-$BUNDLE/results}}"; mkdir -p "$d"; threads_matrix "$d" ;;
  table) table "${2:-}" ;;
  selftest) selftest ;;
  *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
