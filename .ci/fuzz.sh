#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ and runs each for a while; fails on any crash (a panic in
# the target: a broken invariant, a model mismatch, a wrong error).
#
#   bash .ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     # default: 30 s, every target
#
# Stable toolchain: this builds as `cargo fuzz build --sanitizer none --codegen-units 16` does
# (release, debug assertions and overflow checks on, SanitizerCoverage instrumentation), and every
# flag it needs is a stable `-C` flag, so neither nightly nor RUSTC_BOOTSTRAP is needed; only the
# address sanitizer (cargo-fuzz's default) would need nightly `-Zsanitizer`. The release profile's
# 16 codegen units (cargo-fuzz defaults to 1) halve the build (55 s against 126 s from clean here)
# and run as fast. Building directly saves CI the install of cargo-fuzz (49 s here); with it
# installed, `cargo fuzz run --sanitizer none TARGET` in fuzz/ runs the same targets. `--target`
# keeps the instrumentation off build scripts and proc macros, as cargo-fuzz does.
#
# The corpus grows in fuzz/corpus/TARGET (not committed), starting from the committed seeds in
# fuzz/seeds/TARGET; a crashing input is saved in fuzz/artifacts/TARGET and replayed with
#   fuzz/target/<host triple>/release/TARGET fuzz/artifacts/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(coalescing_pool pool_resource)
triple=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/fuzz/target}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
 -Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-sanitizer-coverage-stack-depth
 -Cllvm-args=-simplifycfg-branch-fold-threshold=0 --cfg fuzzing -Cdebug-assertions
 -Coverflow-checks"
RUSTFLAGS=$(echo $RUSTFLAGS)
start=$SECONDS
cargo build --release --locked --manifest-path fuzz/Cargo.toml --target "$triple" --bins
echo "fuzz: targets built in $((SECONDS - start)) s"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t" "fuzz/seeds/$t"
  if ! "$CARGO_TARGET_DIR/$triple/release/$t" -max_total_time="$secs" -print_final_stats=1 \
      -artifact_prefix="fuzz/artifacts/$t/" "fuzz/corpus/$t" "fuzz/seeds/$t" > "$log" 2>&1; then
    grep -vE '^#[0-9]+' "$log" | tail -60
    echo "fuzz $t: CRASHED; input saved in fuzz/artifacts/$t/"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  echo "fuzz $t: $runs runs in $secs s, no crash; $cov, corpus $(ls "fuzz/corpus/$t" | wc -l) inputs"
done
