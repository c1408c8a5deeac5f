#!/usr/bin/env bash
# Builds every test program and puts the binaries in one folder, for a GPU host that has no
# cargo (or no toolchain at all) to run with tests/gpu/check.sh --bin and
# tests/stress/run_sanitizers.sh:
#
#   OUT/rust/NAME  each test executable of `cargo test --release --no-run`, named after its cargo
#                  target: bad_input, stream_reuse, ...; the library's unit tests are OUT/rust/rmm
#   OUT/cpp/NAME   each program of `make all` (BUILD/bin): the examples, rmm_cpp_tests,
#                  rmm_exit_child and the stress programs
#
# The binaries are stripped of debug information (strip --strip-debug); where that leaves more than
# MAX_MIB (default 56: the folder is meant to be copied to a GPU host beside the working tree,
# so it is kept small), of all symbols (strip --strip-all: host stack frames in sanitizer reports lose their
# names; kernel names and -lineinfo stay). The script prints the total size, and fails when the
# folder is still over MAX_MIB. OUT/rust/.build-paths records where the binaries were built: a
# test that reads files by its build-time path (benches/replay/tests/replay.rs) can only run where those paths
# exist, and check.sh and run_sanitizers.sh read the file to tell.
#
#   bash tests/gpu/package.sh [--out DIR] [--no-strip | --strip-all]
#
#   --out DIR    the folder (default .gpu/bin; only its rust/ and cpp/ subfolders are replaced)
#   --no-strip   copy the binaries as built and skip the size limit (for use on this machine)
#   --strip-all  strip all symbols at once
#
# Environment: CUDA_MAJOR (12 or 13; default: make's, that of the toolkit found, else 13: the cargo
# feature cuda-12 or cuda-13 and make's toolkit), CPU (make's: x86-64 unless given; Rust gets
# -Ctarget-cpu), CARGO_TARGET_DIR (default ./target, ./target/cu12 for CUDA 12), BUILD (make's
# build folder, default ./build/cpp, ./build/cpp-cu12 for CUDA 12), ARCH (default sm_90: H100;
# one architecture on purpose: make's own default without a GPU, every one from sm_75 on, would
# repeat each program's kernels eight times and put the folder over MAX_MIB), MAX_MIB, CARGO, MAKE. Every other make variable can be passed in the environment too
# (CUDA_HOME, CCCL_INCLUDE, ...).
set -euo pipefail

out=.gpu/bin
strip=debug
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || { echo "package: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
    --no-strip) strip=none; shift ;;
    --strip-all) strip=all; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
if [ "$out" = / ] || [ "$out" = "$repo" ]; then echo "package: refusing to write into $out" >&2; exit 2; fi
cd "$repo"
major=${CUDA_MAJOR:-}
if [ -z "$major" ]; then
  # make's own choice (the toolkit it finds), so that cargo's feature matches the C++ build.
  major=$("${MAKE:-make}" --no-print-directory -s -C "$repo" print-cuda-major 2>/dev/null | tail -1)
fi
case $major in 12|13) ;; *) echo "package: CUDA_MAJOR must be 12 or 13, not '$major'" >&2; exit 2 ;; esac
export CUDA_MAJOR=$major
suffix=$([ "$major" = 12 ] && echo cu12 || true)
if [ -n "${CPU:-}" ] && [ "$CPU" != x86-64 ]; then export RUSTFLAGS="${RUSTFLAGS:-} -Ctarget-cpu=$CPU"; fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target${suffix:+/$suffix}}
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd -P)
build=${BUILD:-$repo/build/cpp${suffix:+-$suffix}}
max_mib=${MAX_MIB:-56}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The Rust test executables: name<TAB>path for each artifact cargo built as a test.
echo "package: cargo test --release --no-run --features cuda-$major (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
if ! "${CARGO:-cargo}" test --release --no-run --no-default-features --features "cuda-$major" \
  --message-format=json --manifest-path "$repo/Cargo.toml" \
  >"$tmp/cargo.json"; then
  # The compiler's messages went to the JSON: show the errors.
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        m = json.loads(line)
        if m.get("reason") == "compiler-message" and m["message"]["level"] == "error":
            sys.stderr.write(m["message"].get("rendered") or m["message"]["message"])
' "$tmp/cargo.json"
  echo "package: cargo test --release --no-run failed" >&2
  exit 1
fi
python3 - "$tmp/cargo.json" >"$tmp/rust.list" <<'EOF'
import json, sys
seen = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    name = m["target"]["name"]
    if name in seen and seen[name] != m["executable"]:
        # Two targets of one name (a test and a binary, say): keep both, the second by kind.
        name = name + "-" + m["target"]["kind"][0]
    seen[name] = m["executable"]
for name, exe in sorted(seen.items()):
    print(name + "\t" + exe)
EOF
[ -s "$tmp/rust.list" ] || { echo "package: cargo built no test executables" >&2; exit 1; }

# 2. The C++ programs. A make of our own gets -j unless it runs under make's jobserver.
jobs=()
case " ${MAKEFLAGS:-} " in *jobserver*|*" -j"*) ;; *) jobs=(-j"$(nproc)") ;; esac
echo "package: make all (CUDA_MAJOR=$major ARCH=${ARCH:-sm_90} BUILD=$build)"
"${MAKE:-make}" --no-print-directory -C "$repo" "${jobs[@]}" all ARCH="${ARCH:-sm_90}" BUILD="$build"

# 3. Copy and strip; then the sizes.
copy_all() {  # MODE: debug (strip --strip-debug), all (strip --strip-all) or none
  local f name exe
  rm -rf "$out/rust" "$out/cpp"
  mkdir -p "$out/rust" "$out/cpp"
  put() {  # SRC DST
    case $1 in
      debug) strip --strip-debug -o "$3" "$2" ;;
      all) strip --strip-all -o "$3" "$2" ;;
      none) cp "$2" "$3" ;;
    esac
    chmod +x "$3"
  }
  while IFS=$'\t' read -r name exe; do
    put "$1" "$exe" "$out/rust/$name"
  done <"$tmp/rust.list"
  for f in "$build"/bin/*; do
    if [ -f "$f" ] && [ -x "$f" ]; then put "$1" "$f" "$out/cpp/$(basename "$f")"; fi
  done
  printf 'repo=%s\ntarget=%s\ncuda_major=%s\n' "$repo" "$CARGO_TARGET_DIR" "$major" >"$out/rust/.build-paths"
  bytes=$(du -sb "$out" | cut -f1)
}
limit=$((max_mib * 1048576))
copy_all "$strip"
if [ "$strip" = debug ] && [ "$bytes" -gt "$limit" ]; then
  echo "package: $((bytes / 1048576)) MiB with --strip-debug, over $max_mib MiB: stripping all symbols" \
    "(host stack frames in sanitizer reports and backtraces lose their names; kernel names and" \
    "-lineinfo stay)"
  strip=all
  copy_all "$strip"
fi
[ -x "$out/cpp/rmm_cpp_tests" ] || { echo "package: make all built no rmm_cpp_tests in $build/bin" >&2; exit 1; }

rust_n=0 cpp_n=0
for f in "$out"/rust/*; do rust_n=$((rust_n + 1)); done
for f in "$out"/cpp/*; do cpp_n=$((cpp_n + 1)); done
list() { (cd "$1" && for f in *; do printf '%s (%s)  ' "$f" "$(du -h "$f" | cut -f1)"; done); }
echo "package: $out/rust: $(list "$out/rust")" | fold -s -w 100
echo "package: $out/cpp: $(list "$out/cpp")" | fold -s -w 100
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
how=$(case $strip in debug) echo "strip --strip-debug" ;; all) echo "strip --strip-all" ;; none) echo "not stripped" ;; esac)
echo "package: $rust_n Rust test binaries, $cpp_n C++ programs, $mib MiB in all ($how) in $out"
if [ "$strip" != none ] && [ "$bytes" -gt "$limit" ]; then
  echo "package: $mib MiB is over the limit of $max_mib MiB (MAX_MIB)" >&2
  exit 1
fi
echo "package: on the GPU host, from the repository root: bash tests/gpu/check.sh --bin ${out#"$repo"/} --repeat N"
