#!/usr/bin/env bash
# The READMEs' build-by-hand commands, run as written (CI runs this after `make test`): every fenced
# block that follows a line `<!-- ci: hand-build ... -->` in README.md and cpp/README.md, each in a
# fresh bash (set -euo pipefail) from the repository root, with CUDA_HOME a toolkit laid out as a
# stock /usr/local/cuda of CUDA 13.0 is: bin/nvcc with its profile, include/ with CCCL 3.0.1 in
# include/cccl (the nvidia-cuda-cccl 13.0.85 wheel), lib64/ with libcudart.so, nvvm/. It is
# assembled in a temporary folder from the pinned PyPI toolchain (.venv-cuda; its nvcc copied so
# that the profile's paths are the folder's, the rest linked). Each block must leave the program it
# names (-o NAME) built; the program is then run (without a GPU it prints "skipped: no CUDA device")
# and removed.
#
# Environment: CUDA_HOME (default: the stock-layout toolkit above; give a real one to check
# against it instead), RMM_README_KEEP=1 to keep the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
fail() { echo "readme_builds: FAILED: $*" >&2; exit 1; }

work=$(mktemp -d)
if [ "${RMM_README_KEEP:-0}" = 1 ]; then echo "readme_builds: work folder $work"; else
  trap 'rm -rf "$work"' EXIT; fi

if [ -z "${CUDA_HOME:-}" ]; then
  bash .ci/install-toolchain.sh cuda
  site=$(.venv-cuda/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  pypi=$site/nvidia/cu13
  # CCCL 3.0.1, as CUDA 13.0 ships it, in a venv of its own.
  if [ ! -f "$work/cccl301/bin/pip" ]; then
    python3 -m venv "$work/cccl301"
    "$work/cccl301/bin/pip" install -q --disable-pip-version-check nvidia-cuda-cccl==13.0.85 \
      || fail "pip install nvidia-cuda-cccl==13.0.85"
  fi
  old_cccl=$(echo "$work"/cccl301/lib/python3*/site-packages/nvidia/cu13/include/cccl)
  [ -f "$old_cccl/cuda/std/__cccl/version.h" ] || fail "no CCCL in $old_cccl"
  CUDA_HOME=$work/cuda
  mkdir -p "$CUDA_HOME/bin" "$CUDA_HOME/include" "$CUDA_HOME/lib64"
  for f in "$pypi"/bin/*; do ln -s "$f" "$CUDA_HOME/bin/"; done
  rm "$CUDA_HOME/bin/nvcc" "$CUDA_HOME/bin/nvcc.profile"
  cp "$pypi/bin/nvcc" "$pypi/bin/nvcc.profile" "$CUDA_HOME/bin/"
  for f in "$pypi"/include/*; do [ "$(basename "$f")" = cccl ] || ln -s "$f" "$CUDA_HOME/include/"; done
  ln -s "$old_cccl" "$CUDA_HOME/include/cccl"
  for f in "$pypi"/lib/*; do ln -s "$f" "$CUDA_HOME/lib64/"; done
  ln -s libcudart.so.13 "$CUDA_HOME/lib64/libcudart.so"
  ln -s "$pypi/nvvm" "$CUDA_HOME/nvvm"
  echo "readme_builds: a stock-layout CUDA 13.0 in $CUDA_HOME: $("$CUDA_HOME/bin/nvcc" --version | tail -1)," \
    "CCCL $(sed -n 's/^#define CCCL_VERSION \([0-9]*\).*/\1/p' "$CUDA_HOME/include/cccl/cuda/std/__cccl/version.h")"
fi
export CUDA_HOME

# The marked blocks: FILE:LINE and the text of each, into $work/blocks/N.sh.
mkdir -p "$work/blocks"
python3 - "$work/blocks" README.md cpp/README.md <<'PY'
import re, sys
out, n = sys.argv[1], 0
for path in sys.argv[2:]:
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"\s*<!--\s*ci:\s*hand-build\b", lines[i]):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = j + 1
            while k < len(lines) and not lines[k].startswith("```"):
                k += 1
            n += 1
            with open(f"{out}/{n}.sh", "w") as f:
                f.write(f"# {path}:{j + 2}\n" + "\n".join(lines[j + 1:k]) + "\n")
            i = k
        i += 1
PY
count=$(ls "$work/blocks" | wc -l)
[ "$count" -ge 2 ] || fail "found $count marked blocks in README.md and cpp/README.md (expected at least 2)"

for b in $(ls "$work/blocks" | sort -n); do
  where=$(head -1 "$work/blocks/$b" | sed 's/^# //')
  echo "== readme_builds: $where"
  sed '1d; s/^/   | /' "$work/blocks/$b"
  prog=$(grep -o -- '-o [^ ]*' "$work/blocks/$b" | tail -1 | cut -d' ' -f2)
  [ -n "$prog" ] || fail "$where: the block names no program (-o NAME)"
  rm -f "$prog"
  (cd "$repo" && bash -euo pipefail "$work/blocks/$b") || fail "$where: the commands failed"
  [ -x "$prog" ] || fail "$where: no $prog after the commands"
  out=$("./$prog" 2>&1) || fail "$where: ./$prog exited with $?: $out"
  echo "   ./$prog: $out"
  rm -f "$prog"
done
echo "readme_builds: $count blocks built as written: OK"
