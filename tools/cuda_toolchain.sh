#!/usr/bin/env bash
# Chooses the CUDA toolkit, the CCCL headers and the GPU architectures that make builds with, and
# says so in one line on standard error, e.g.
#
#   rmm-rs: nvcc 13.0.88 (/usr/local/cuda, on PATH), CCCL 3.5.0 (PyPI: toolkit has 3.0.1), arch sm_90 (GPU present)
#
# nvcc: the first of NVCC given, CUDA_HOME given, nvcc on the PATH and /usr/local/cuda/bin/nvcc
# whose release is CUDA 12 or 13 (CUDA_MAJOR's where that is given); where there is none, the
# pinned toolchain from PyPI (.venv-cuda; .venv-cuda12 for CUDA_MAJOR=12; .ci/install-toolchain.sh).
# CCCL: CCCL_INCLUDE given, else the toolkit's own, where it is 3.5 or newer; else CCCL 3.5 from
# PyPI (the nvidia-cuda-cccl wheel in .venv-cuda or .venv-cuda12).
# Architectures: ARCH given (sm_90; a list, "sm_80 sm_90" or sm_80,sm_90; or native, all,
# all-major); else those of the GPUs present (nvcc's own device query, which -arch=native uses,
# else nvidia-smi); else, with no GPU, every architecture the nvcc supports from Turing (sm_75) on,
# as machine code, plus PTX of the newest (for GPUs newer than the toolkit). Left out of that list:
# the architectures of Arm systems only (Jetson sm_72, sm_87, sm_88; Thor sm_101, sm_110; GB10
# sm_121), which an x86-64 program never meets.
#
#   bash tools/cuda_toolchain.sh [--install | --dry-run] [--make] [--quiet]
#
#   --install   install what is missing from the pinned toolchain (into the repository's
#               .venv-cuda or .venv-cuda12, nothing outside it), after a line that says what and
#               why; without it, nothing is installed and the line says what would be
#   --dry-run   the line says "would install" (for make -n)
#   --make      print the choice as make assignments separated by '|' (else shell assignments,
#               one a line)
#   --quiet     no line on standard error
#
# Environment, each empty or unset when not given: NVCC, CUDA_HOME, CCCL_INCLUDE, CUDA_MAJOR, ARCH.
# Printed: CUDA_MAJOR, CUDA_HOME, NVCC, NVCC_VERSION, CUDA_LIBDIR (where libcudart_static.a is:
# lib64 in a toolkit, lib in the PyPI one), CCCL_INCLUDE, CCCL_VERSION, ARCH (the architectures,
# "sm_75 sm_80 ..."), ARCH_FLAGS (nvcc's flags for them), ARCH_ONE (one of them, for compile-only
# checks), CMAKE_ARCHS (CMAKE_CUDA_ARCHITECTURES for them), READY (yes when nvcc and CCCL are
# there), SUMMARY (the line).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=probe form=shell quiet=
for a in "$@"; do
  case $a in
    --install) mode=install ;;
    --dry-run) mode=dry ;;
    --make) form=make ;;
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "cuda_toolchain: unknown option $a" >&2; exit 2 ;;
  esac
done

given_nvcc=${NVCC:-} given_home=${CUDA_HOME:-} given_cccl=${CCCL_INCLUDE:-}
given_major=${CUDA_MAJOR:-} given_arch=${ARCH:-}
case $given_major in ''|12|13) ;; *) echo "rmm-rs: CUDA_MAJOR must be 12 or 13, not '$given_major'" >&2; exit 2 ;; esac

# "13.0.88" from nvcc --version ("Cuda compilation tools, release 13.0, V13.0.88").
nvcc_version() {
  "$1" --version 2>/dev/null | sed -n 's/.*release [0-9.]*, V\([0-9][0-9.]*\).*/\1/p' | tail -1
}
# CCCL's version of an include directory as a number (3.5.0 -> 3005000), or nothing.
cccl_number() {
  local f=$1/cuda/std/__cccl/version.h v
  if [ -f "$f" ]; then
    sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]*CCCL_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$f" | head -1
    return
  fi
  # Before CCCL 2.2 only Thrust's own: THRUST_VERSION is major * 100000 + minor * 100 + patch.
  f=$1/thrust/version.h
  if [ -f "$f" ]; then
    v=$(sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]*THRUST_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$f" | head -1)
    if [ -n "$v" ]; then echo $(( v / 100000 * 1000000 + v / 100 % 1000 * 1000 + v % 100 )); fi
  fi
}
cccl_text() { echo "$(( $1 / 1000000 )).$(( $1 / 1000 % 1000 )).$(( $1 % 1000 ))"; }
# The toolkit's own CCCL: include/cccl (CUDA 13) or include (CUDA 12).
toolkit_cccl() {
  local d
  for d in "$1/include/cccl" "$1/include" "$1/targets/x86_64-linux/include/cccl" "$1/targets/x86_64-linux/include"; do
    if [ -n "$(cccl_number "$d")" ]; then echo "$d"; return; fi
  done
}
site_of() {  # VENV -> its site-packages (the path carries the venv's Python version)
  [ -x "$1/bin/python" ] && "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null
}
rel() { case $1 in "$repo"/*) echo "${1#"$repo"/}" ;; *) echo "$1" ;; esac; }
joined() { local IFS=';'; echo "$*" | sed 's/;/; /g'; }

# ---- nvcc: sets nvcc, home, version, how, major, nvcc_missing, nvcc_why ----
find_nvcc() {
  local -a paths=() hows=() skipped=()
  local i c v m real
  if [ -n "$given_nvcc" ]; then paths+=("$given_nvcc"); hows+=("NVCC given"); fi
  if [ -n "$given_home" ]; then paths+=("$given_home/bin/nvcc"); hows+=("CUDA_HOME given"); fi
  if c=$(command -v nvcc 2>/dev/null); then paths+=("$c"); hows+=("on PATH"); fi
  paths+=(/usr/local/cuda/bin/nvcc); hows+=("/usr/local/cuda")
  nvcc= home= version= how= nvcc_missing= nvcc_why=
  for i in "${!paths[@]}"; do
    c=${paths[$i]}
    if ! command -v "$c" >/dev/null 2>&1; then
      case ${hows[$i]} in *given) skipped+=("${hows[$i]}: no nvcc at $c") ;; esac
      continue
    fi
    v=$(nvcc_version "$c")
    m=${v%%.*}
    if [ -z "$v" ]; then skipped+=("$c (${hows[$i]}) does not run"); continue; fi
    if [ "$m" -lt 12 ]; then skipped+=("nvcc $v (${hows[$i]}) is older than CUDA 12"); continue; fi
    if [ "$m" -gt 13 ]; then skipped+=("nvcc $v (${hows[$i]}) is newer than CUDA 13"); continue; fi
    if [ -n "$given_major" ] && [ "$m" != "$given_major" ]; then
      skipped+=("nvcc $v (${hows[$i]}) is not CUDA_MAJOR=$given_major"); continue
    fi
    nvcc=$c version=$v how=${hows[$i]}
    if [ -n "$given_home" ] && [ "$how" != "on PATH" ] && [ "$how" != /usr/local/cuda ]; then
      home=$given_home how="$home, $how"
    else
      # The toolkit root: the folder above bin/nvcc, or above the file a link named nvcc
      # points to (/usr/bin/nvcc -> /usr/local/cuda-13.0/bin/nvcc).
      home=$(dirname "$(dirname "$(command -v "$c")")")
      if [ ! -e "$home/include/cuda_runtime.h" ]; then
        real=$(readlink -f "$(command -v "$c")")
        home=$(dirname "$(dirname "$real")")
      fi
      if [ "$how" = "on PATH" ]; then how="$home, on PATH"; fi
      if [ "$how" = "NVCC given" ]; then how="$home, NVCC given"; fi
    fi
    [ ${#skipped[@]} -eq 0 ] || nvcc_why=$(joined "${skipped[@]}")
    major=${given_major:-$m}
    return
  done
  major=${given_major:-13}
  pinned_venv=$repo/.venv-cuda$([ "$major" = 12 ] && echo 12)
  if [ "$major" = 12 ]; then home=$pinned_venv/cuda12; else
    local s; s=$(site_of "$pinned_venv"); home=${s:-$pinned_venv/lib/python3/site-packages}/nvidia/cu13; fi
  nvcc=$home/bin/nvcc
  how="PyPI in $(rel "$pinned_venv")"
  if [ ${#skipped[@]} -gt 0 ]; then nvcc_why=$(joined "${skipped[@]}")
  else nvcc_why="no nvcc given, on PATH or in /usr/local/cuda"; fi
  if [ -x "$nvcc" ]; then version=$(nvcc_version "$nvcc"); fi
  [ -n "$version" ] || nvcc_missing=1
}

# ---- CCCL: sets cccl, cccl_n, cccl_how, cccl_missing ----
find_cccl() {
  local n t v s d tn=
  cccl= cccl_n= cccl_how= cccl_missing=
  if [ -n "$given_cccl" ]; then
    n=$(cccl_number "$given_cccl")
    if [ -n "$n" ] && [ "$n" -ge 3005000 ]; then cccl=$given_cccl cccl_n=$n cccl_how="CCCL_INCLUDE given"; return; fi
    cccl_how="PyPI: CCCL_INCLUDE given has $([ -n "$n" ] && echo "CCCL $(cccl_text "$n")" || echo "no CCCL")"
  else
    t=$(toolkit_cccl "$home")
    [ -z "$t" ] || tn=$(cccl_number "$t")
    if [ -n "$tn" ] && [ "$tn" -ge 3005000 ]; then cccl=$t cccl_n=$tn cccl_how="from the toolkit"; return; fi
    cccl_how="PyPI: toolkit has $([ -n "$tn" ] && cccl_text "$tn" || echo none)"
  fi
  # CCCL 3.5 from PyPI: the pinned venv of the major, else the other one.
  for v in "$pinned_venv" "$repo/.venv-cuda" "$repo/.venv-cuda12"; do
    s=$(site_of "$v") || continue
    d=$s/nvidia/cu13/include/cccl
    n=$(cccl_number "$d")
    if [ -n "$n" ] && [ "$n" -ge 3005000 ]; then cccl=$d cccl_n=$n; return; fi
  done
  s=$(site_of "$pinned_venv")
  cccl=${s:-$pinned_venv/lib/python3/site-packages}/nvidia/cu13/include/cccl
  cccl_missing=1
}

pinned_venv=
find_nvcc
pinned_venv=$repo/.venv-cuda$([ "$major" = 12 ] && echo 12)
find_cccl

# ---- install what is missing (only into the repository's venvs) ----
if [ -n "$nvcc_missing$cccl_missing" ]; then
  if [ -n "$nvcc_missing" ]; then
    what="nvcc $([ "$major" = 12 ] && echo 12.4 || echo 13.0.88) and CCCL 3.5" part=cuda why=$nvcc_why
  else
    what="CCCL 3.5" part=cccl
    case $cccl_how in
      *"toolkit has none") why="the toolkit has no CCCL" ;;
      *"toolkit has "*) why="the toolkit's CCCL is ${cccl_how##*has }, older than 3.5" ;;
      *) why="${cccl_how#PyPI: }, older than 3.5" ;;
    esac
  fi
  where="$(rel "$pinned_venv") (CUDA_MAJOR=$major bash .ci/install-toolchain.sh $part)"
  case $mode in
    install)
      [ -n "$quiet" ] || echo "rmm-rs: $why: installing $what from PyPI into $where" >&2
      if ! CUDA_MAJOR=$major bash "$repo/.ci/install-toolchain.sh" "$part" >&2; then
        echo "rmm-rs: installing $what failed (output above). Give a CUDA 12 or 13 toolkit and CCCL 3.5: make NVCC=<nvcc> CCCL_INCLUDE=<CCCL 3.5 include directory>" >&2
        exit 1
      fi
      find_nvcc
      find_cccl ;;
    dry) [ -n "$quiet" ] || echo "rmm-rs: $why: would install $what from PyPI into $where" >&2 ;;
  esac
fi
ready=$([ -z "$nvcc_missing$cccl_missing" ] && echo yes)
libdir=
for d in "$home/lib64" "$home/lib" "$home/targets/x86_64-linux/lib"; do
  if [ -e "$d/libcudart_static.a" ]; then libdir=$d; break; fi
done

# ---- architectures: sets arch (list), arch_flags, arch_how ----
# The architectures nvcc builds machine code for, as numbers (75 80 ...), without the a/f variants.
nvcc_codes() { "$nvcc" --list-gpu-code 2>/dev/null | sed -n 's/^sm_\([0-9]*\)$/\1/p' | sort -n | uniq; }
# GPU compute capabilities present, as numbers: nvcc's device query (what -arch=native uses), else
# nvidia-smi.
gpu_caps() {
  local q out
  q=$(dirname "$nvcc")/__nvcc_device_query
  if [ -x "$q" ] && out=$("$q" 2>/dev/null); then
    out=$(echo "$out" | tr ', ;' '\n\n\n' | sed -n 's/^sm_//; s/^\([0-9][0-9]*\)\.\([0-9]\)$/\1\2/p; t; s/^\([0-9][0-9][0-9]*\)$/\1/p' | sort -n | uniq)
    if [ -n "$out" ]; then echo "$out"; return; fi
  fi
  if command -v nvidia-smi >/dev/null && out=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null); then
    echo "$out" | sed -n 's/^ *\([0-9]*\)\.\([0-9]*\) *$/\1\2/p' | sort -n | uniq
  fi
}
gencode() {  # NUMBERS... -> machine code for each, PTX of the last (the newest)
  local a flags=()
  for a in "$@"; do flags+=("-gencode arch=compute_$a,code=sm_$a"); done
  flags+=("-gencode arch=compute_${*: -1},code=compute_${*: -1}")
  echo "${flags[*]}"
}
arch= arch_flags= arch_how= cmake_archs=
arm_only=" 72 87 88 101 110 121 "
if [ -n "$given_arch" ]; then
  list=$(echo "$given_arch" | tr ',;' '  ')
  set -- $list
  if [ $# -eq 1 ] && [[ $1 =~ ^(native|all|all-major)$ ]]; then
    arch=$1 arch_flags="-arch=$1" cmake_archs=$1
  else
    for a in "$@"; do
      a=${a#sm_}; a=${a#compute_}
      if ! [[ $a =~ ^[0-9]+[af]?$ ]]; then
        echo "rmm-rs: ARCH=\"$given_arch\" is not a GPU architecture: give sm_90, a list (\"sm_80 sm_90\"), native, all or all-major" >&2
        exit 2
      fi
    done
  fi
  if [ -n "$arch" ]; then :
  elif [ $# -eq 1 ]; then
    n=${1#sm_}; n=${n#compute_}
    arch=sm_$n arch_flags="-arch=sm_$n" cmake_archs=$n
  else
    nums=$(for a in "$@"; do a=${a#sm_}; echo "${a#compute_}"; done | sort -V | uniq | tr '\n' ' ')
    set -- $nums
    arch=$(printf 'sm_%s ' "$@"); arch=${arch% }
    arch_flags=$(gencode "$@")
    cmake_archs=$(printf '%s-real;' "${@:1:$#-1}")${*: -1}
  fi
  arch_how="ARCH given"
fi
if [ -z "$arch" ] && [ -n "$version" ]; then
  caps=$(gpu_caps | tr '\n' ' ')
  codes=$(nvcc_codes | tr '\n' ' ')
  if [ -n "${caps// }" ]; then
    # Each GPU's own architecture as machine code, and PTX of the newest; a GPU newer than this
    # nvcc knows runs the PTX of the newest architecture it makes (not an Arm-only one) instead.
    sass=() newer=()
    for c in $caps; do
      if [[ " $codes " == *" $c "* ]]; then sass+=("$c"); else newer+=("$c"); fi
    done
    ptx=${sass[-1]:-}
    if [ ${#newer[@]} -gt 0 ]; then
      ptx=$(for c in $codes; do [ "$c" -le "${newer[-1]}" ] && [[ $arm_only != *" $c "* ]] && echo "$c"; done | tail -1)
    fi
    if [ ${#sass[@]} -eq 1 ] && [ "$ptx" = "${sass[0]}" ]; then
      arch=sm_$ptx arch_flags="-arch=sm_$ptx" cmake_archs=$ptx
    else
      flags=() arch= cmake_archs=
      for c in "${sass[@]}"; do flags+=("-gencode arch=compute_$c,code=sm_$c"); arch+="sm_$c "; cmake_archs+="$c-real;"; done
      if [ -n "$ptx" ]; then flags+=("-gencode arch=compute_$ptx,code=compute_$ptx"); cmake_archs+="$ptx-virtual"; fi
      arch_flags=${flags[*]}
      if [ ${#newer[@]} -gt 0 ] && [ -n "$ptx" ]; then arch+="compute_$ptx"; fi
      arch=${arch% } cmake_archs=${cmake_archs%;}
    fi
    arch_how="GPU present$([ ${#newer[@]} -eq 0 ] || echo ": sm_${newer[*]} is newer than nvcc $version, which makes PTX for it")"
  else
    set -- $(for c in $codes; do [ "$c" -ge 75 ] && [[ $arm_only != *" $c "* ]] && echo "$c"; done)
    if [ $# -gt 0 ]; then
      arch=$(printf 'sm_%s ' "$@"); arch=${arch% }
      arch_flags=$(gencode "$@")
      cmake_archs=$(printf '%s-real;' "$@")${*: -1}-virtual
      arch_how="no GPU found: every architecture of nvcc $version from sm_75 on, PTX compute_${*: -1}"
    fi
  fi
fi
if [ -z "$arch" ]; then
  # No nvcc to ask (not installed yet): what the pinned nvcc 13.0 would give.
  arch="sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_103 sm_120"
  arch_flags=$(gencode 75 80 86 89 90 100 103 120)
  cmake_archs="75-real;80-real;86-real;89-real;90-real;100-real;103-real;120-real;120-virtual"
  arch_how="no GPU found: those of the pinned nvcc 13.0 from sm_75 on"
fi
arch_one=${arch%% *}
[[ $arch_one == sm_* ]] || arch_one=sm_75

nvcc_text="nvcc ${version:-(not installed)} ($how)"
[ -z "$nvcc_why" ] || nvcc_text="nvcc ${version:-(not installed)} ($how: $nvcc_why)"
cccl_text_=${cccl_n:+CCCL $(cccl_text "$cccl_n")}
summary="$nvcc_text, ${cccl_text_:-CCCL (not installed)} ($cccl_how$([ "$cccl_how" = "from the toolkit" ] || [[ $cccl_how == *given ]] || echo ", $(rel "$cccl")")), arch $arch ($arch_how)"
# Once per make: a sub-make whose choice is the same as its parent's (RMM_TOOLCHAIN_SHOWN) is quiet.
[ -n "$quiet" ] || [ "$summary" = "${RMM_TOOLCHAIN_SHOWN:-}" ] || echo "rmm-rs: $summary" >&2

out() {  # NAME VALUE
  if [ $form = make ]; then printf 'rmm_tc_%s := %s|' "$1" "$2"; else printf '%s=%q\n' "$1" "$2"; fi
}
out CUDA_MAJOR "$major"
out CUDA_HOME "$home"
out NVCC "$nvcc"
out NVCC_VERSION "$version"
out CUDA_LIBDIR "$libdir"
out CCCL_INCLUDE "$cccl"
out CCCL_VERSION "${cccl_n:+$(cccl_text "$cccl_n")}"
out ARCH "$arch"
out ARCH_FLAGS "$arch_flags"
out ARCH_ONE "$arch_one"
out CMAKE_ARCHS "$cmake_archs"
out READY "$ready"
out SUMMARY "$summary"
[ $form = make ] && echo
[ -n "$ready" ] || [ $mode != install ] || exit 1
exit 0
