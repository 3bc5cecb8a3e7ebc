#!/usr/bin/env bash
# Installs the built host emulation of CANN into a folder laid out like a CANN toolkit, so that it is
# found exactly as a real installation is: source <root>/ascend-toolkit/set_env.sh, then run scripts
# without ACLNN_LIB_DIR or libDir (the library searches $ASCEND_HOME_PATH/lib64).
#
#   tools/install_emulated_toolkit.sh <root> [--copy] [--from <emulation build dir>]
#
# Layout (as CANN's installer makes it; `latest` and `lib64` are symlinks there too):
#   <root>/ascend-toolkit/set_env.sh                    exports ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH,
#                                                       ASCEND_OPP_PATH, ASCEND_AICPU_PATH, TOOLCHAIN_HOME,
#                                                       LD_LIBRARY_PATH, PATH
#   <root>/ascend-toolkit/latest -> 8.0.0
#   <root>/ascend-toolkit/8.0.0/<arch>-linux/lib64/     libascendcl.so libnnopbase.so libopapi.so
#   <root>/ascend-toolkit/8.0.0/lib64 -> <arch>-linux/lib64
#   <root>/ascend-toolkit/8.0.0/{opp/built-in,opp/vendors,bin,include}/
#   <root>/ascend-toolkit/8.0.0/version.cfg
#
# The libraries are symlinks to the build by default: the dynamic loader identifies a library by its
# file, so a process that also opens the build folder itself (the tests' emulated lane) gets one runtime.
# --copy installs independent copies instead, as a real CANN next to the emulation is: then a process
# must load only one of the two (see tests/support/lanes.ts).
set -euo pipefail

usage() {
  echo "usage: $0 <root> [--copy] [--from <emulation build dir>]" >&2
  exit 2
}

root=""
mode=link
from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --copy) mode=copy ;;
    --from)
      [ $# -ge 2 ] || usage
      from="$2"
      shift
      ;;
    -h | --help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *)
      [ -z "$root" ] || usage
      root="$1"
      ;;
  esac
  shift
done
[ -n "$root" ] || usage

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
from="${from:-$repo/native/build}"
from="$(cd "$from" 2>/dev/null && pwd)" || {
  echo "emulation build folder not found: run \`make -s -C native\` (or deno task build:native) first" >&2
  exit 1
}
for lib in libascendcl.so libnnopbase.so libopapi.so; do
  if [ ! -f "$from/$lib" ]; then
    echo "$from/$lib is missing: run \`make -s -C native\` (or deno task build:native) first" >&2
    exit 1
  fi
done

version=8.0.0 # what the emulation's aclrtGetVersion reports
# CANN names the folder after the libraries' architecture (their ELF e_machine: a cross build too).
case "$(od -An -tx1 -j18 -N1 "$from/libascendcl.so" | tr -d ' ')" in
  b7) arch=aarch64 ;;
  3e) arch=x86_64 ;;
  *) arch="$(uname -m)" ;;
esac
mkdir -p "$root"
toolkit="$(cd "$root" && pwd)/ascend-toolkit"
home="$toolkit/$version"

mkdir -p "$home/$arch-linux/lib64" "$home/opp/built-in" "$home/opp/vendors" "$home/bin" "$home/include"
for lib in libascendcl.so libnnopbase.so libopapi.so; do
  rm -f "$home/$arch-linux/lib64/$lib"
  if [ "$mode" = copy ]; then
    cp "$from/$lib" "$home/$arch-linux/lib64/$lib"
  else
    ln -s "$from/$lib" "$home/$arch-linux/lib64/$lib"
  fi
done
ln -sfn "$arch-linux/lib64" "$home/lib64"
ln -sfn "$version" "$toolkit/latest"
printf 'runtime_running_version=[%s]\n' "$version" >"$home/version.cfg"

# Absolute paths, as CANN's installer writes them, so the file works from any shell and directory.
latest="$toolkit/latest"
cat >"$toolkit/set_env.sh" <<EOF
# Environment of the emulated CANN toolkit in $toolkit (tools/install_emulated_toolkit.sh), set as
# CANN's own set_env.sh sets it. Use: source $toolkit/set_env.sh
__aclemu_prepend() { # name value: value first, without duplicating it
  local current
  current="\$(eval echo "\\\${\$1:-}" | tr ':' '\\n' | grep -v -x -F -- "\$2" | tr '\\n' ':' | sed 's/:*\$//' || true)"
  if [ -z "\$current" ]; then export "\$1=\$2"; else export "\$1=\$2:\$current"; fi
}
export ASCEND_TOOLKIT_HOME="$latest"
export ASCEND_HOME_PATH="$latest"
export ASCEND_OPP_PATH="$latest/opp"
export ASCEND_AICPU_PATH="$latest"
export TOOLCHAIN_HOME="$latest/toolkit"
__aclemu_prepend LD_LIBRARY_PATH "$latest/lib64/plugin/nnengine"
__aclemu_prepend LD_LIBRARY_PATH "$latest/lib64/plugin/opskernel"
__aclemu_prepend LD_LIBRARY_PATH "$latest/lib64"
__aclemu_prepend PATH "$latest/bin"
unset -f __aclemu_prepend
EOF

echo "installed the emulation ($mode) in $toolkit; use: source $toolkit/set_env.sh"
