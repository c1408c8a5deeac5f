#!/usr/bin/env bash
# The closing line of `make test`: tests passed, failed and skipped per runner, read from the log
# of the run: cargo's `test result:` lines (ignored tests count as skipped), GoogleTest's summaries
# and pytest's closing line (errors count as failed). A GPU test that prints "skipped: no CUDA
# device" and returns counts as passed for cargo, which cannot tell it apart.
#
#   bash tests/tools/summary.sh LOG
set -euo pipefail
log=${1:?usage: summary.sh LOG}

# sum REGEX FIELD: the sum, over every match of REGEX in the log, of its whitespace field FIELD.
sum() { { grep -aoE "$1" "$log" || true; } | awk -v f="$2" '{s += $f} END {print s + 0}'; }

result='^test result: [a-zA-Z]+\. [0-9]+ passed'
rust_passed=$(sum "$result" 4)
rust_failed=$(sum "$result; [0-9]+ failed" 6)
rust_skipped=$(sum "$result; [0-9]+ failed; [0-9]+ ignored" 8)

cpp_passed=$(sum '^\[  PASSED  \] [0-9]+ tests?' 4)
cpp_failed=$(sum '^\[  FAILED  \] [0-9]+ tests?, listed below' 4)
cpp_skipped=$(sum '^\[  SKIPPED \] [0-9]+ tests?' 4)

# pytest's closing line ("N failed, M passed, K skipped in S s"), the last one of the log.
pyline=$({ grep -aE '^(=+ )?[0-9]+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed)\b.* in [0-9.]+s' "$log" || true; } | tail -1)
pyn() { echo "$pyline" | { grep -oE "[0-9]+ $1" || true; } | awk '{s += $1} END {print s + 0}'; }
py_passed=$(pyn passed)
py_failed=$(($(pyn failed) + $(pyn 'errors?')))
py_skipped=$(pyn skipped)

echo "rmm-rs test summary:" \
  "Rust $rust_passed passed, $rust_failed failed, $rust_skipped skipped;" \
  "C++ (GoogleTest) $cpp_passed passed, $cpp_failed failed, $cpp_skipped skipped;" \
  "Python $py_passed passed, $py_failed failed, $py_skipped skipped;" \
  "total $((rust_passed + cpp_passed + py_passed)) passed, $((rust_failed + cpp_failed + py_failed)) failed," \
  "$((rust_skipped + cpp_skipped + py_skipped)) skipped"
