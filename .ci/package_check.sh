#!/usr/bin/env bash
# The crate as crates.io would ship it: `cargo package -p rmm-rs` (with any workspace crate it
# depends on by path, packaged beside it), then its tests built and run from the unpacked package
# alone, so that a file a test reads but the package leaves out fails here. GPU tests skip without
# a device, as they do in `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The version of rmm-rs, then the workspace crates it depends on by path: cargo packages them
# together, and the unpacked rmm-rs is then pointed at their unpacked packages (crates.io would
# have them).
read -r version deps < <(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
core = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "rmm-rs")
print(core["version"], *(d["name"] for d in core["dependencies"] if d.get("path")))')
args=(-p rmm-rs)
for d in $deps; do args+=(-p "$d"); done
cargo package "${args[@]}" --no-verify --allow-dirty --quiet --target-dir "$work/target"
patches=()
for crate in "$work"/target/package/*.crate; do tar xzf "$crate" -C "$work"; done
for d in $deps; do
  dir=$(ls -d "$work/$d"-*/ | head -1)
  patches+=(--config "patch.crates-io.$d.path=\"$dir\"")
done
cd "$work/rmm-rs-$version"
echo "package_check: testing rmm-rs $version from its package ($(find . -type f | wc -l) files${deps:+; with $deps})"
log=$work/test.log
status=0
cargo test --quiet "${patches[@]}" --target-dir "$work/target" >"$log" 2>&1 || status=$?
grep -E 'FAILED|panicked' "$log" | head -20 || true
awk '/^test result:/ { p += $4; f += $6; i += $8; n++ }
     END { printf "package_check: %d test binaries from the package: %d passed, %d failed, %d ignored\n", n, p, f, i }' "$log"
[ "$status" -eq 0 ] || { tail -30 "$log"; echo "package_check: cargo test failed ($status)"; exit 1; }
