#!/usr/bin/env bash
# Copies the cxx bridge headers of FROM (cargo's target/cxxbridge) under TO, rewriting a header only
# when its text changed. cargo's own are links into the output folder of the profile built last,
# so their dates move with every cargo build of another profile; the copies keep theirs, and the
# C++ objects that include them stay up to date.
#
#   bash tests/cpp/stage_bridge_headers.sh FROM TO
set -euo pipefail
from=${1:?usage: stage_bridge_headers.sh FROM TO}
to=${2:?usage: stage_bridge_headers.sh FROM TO}
(cd "$from" && find -L . -name '*.h') | while read -r h; do
  mkdir -p "$to/$(dirname "$h")"
  cmp -s "$from/$h" "$to/$h" || cp "$from/$h" "$to/$h"
done
