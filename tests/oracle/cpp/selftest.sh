#!/usr/bin/env bash
# Checks the C++ oracle runner itself, here, without a GPU (build.sh runs it last):
#  1. both binaries list the same scenario names, none twice;
#  2. a scenario that kills its process is recorded as {"crash": 11} and the next one still runs;
#  3. every line each binary prints for the host-only areas (aligned_fns, error, api, harness)
#     is a JSON object with scenario, status and trace.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BIN="${ORACLE_BIN_DIR:-$REPO/.oracle}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "oracle selftest: $*" >&2; exit 1; }

for side in ours rmm; do
  [ -x "$BIN/oracle_cpp_$side" ] || fail "$BIN/oracle_cpp_$side missing"
  "$BIN/oracle_cpp_$side" --list > "$TMP/$side.names"
  [ -z "$(sort "$TMP/$side.names" | uniq -d)" ] || fail "$side lists a scenario twice"
done
cmp -s "$TMP/ours.names" "$TMP/rmm.names" || fail "the two sides list different scenarios"

for side in ours rmm; do
  ORACLE_SELFTEST_CRASH=1 "$BIN/oracle_cpp_$side" --filter cpp/harness/ > "$TMP/$side.crash" 2>/dev/null
  for area in aligned_fns error api; do
    "$BIN/oracle_cpp_$side" --filter "cpp/$area/" >> "$TMP/$side.host" 2>/dev/null
  done
done
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
for side in ("ours", "rmm"):
    rows = [json.loads(l) for l in open(f"{tmp}/{side}.crash")]
    names = [r["scenario"] for r in rows]
    assert names == ["cpp/harness/crash_selftest", "cpp/harness/after_crash"], names
    assert rows[0].get("crash") == 11, rows[0]
    assert rows[1]["trace"] == [["side_independent", True]], rows[1]
    host = [json.loads(l) for l in open(f"{tmp}/{side}.host")]
    assert len(host) > 40, len(host)
    for r in host:
        assert {"scenario", "status", "trace"} <= r.keys(), r
        assert all(isinstance(x, list) and len(x) == 2 for x in r["trace"]), r
print("oracle selftest: ok (%d scenarios a side; crash recorded and the group went on)"
      % sum(1 for _ in open(f"{tmp}/ours.host")))
PY
