#!/usr/bin/env bash
# Builds the BPF object for this machine's architecture (`deno task bpf`): the
# __TARGET_ARCH_ define and the multiarch include directory (asm/types.h) come
# from `uname -m`, never a fixed x86.
#   scripts/build_bpf.sh [SOURCE [OUT [CLANG_ARGS...]]]   defaults bpf/lace.bpf.c bpf/lace.bpf.o
# BUILD_BPF_PRINT=1 prints the clang command instead of running it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-bpf/lace.bpf.c}
out=${2:-bpf/lace.bpf.o}
shift $(($# < 2 ? $# : 2))

machine=$(uname -m)
# uname -m → the kernel's arch name (bpf_tracing.h) and Debian's multiarch tuple.
case "$machine" in
  x86_64) arch=x86 multiarch=x86_64-linux-gnu ;;
  i?86) arch=x86 multiarch=i386-linux-gnu ;;
  aarch64 | arm64) arch=arm64 multiarch=aarch64-linux-gnu ;;
  armv7* | armv8l) arch=arm multiarch=arm-linux-gnueabihf ;;
  ppc64le) arch=powerpc multiarch=powerpc64le-linux-gnu ;;
  s390x) arch=s390 multiarch=s390x-linux-gnu ;;
  riscv64) arch=riscv multiarch=riscv64-linux-gnu ;;
  loongarch64) arch=loongarch multiarch=loongarch64-linux-gnu ;;
  mips64el) arch=mips multiarch=mips64el-linux-gnuabi64 ;;
  *)
    echo "build_bpf: no BPF target known for machine \"$machine\": add it to scripts/build_bpf.sh" >&2
    exit 1
    ;;
esac

cmd=(clang -O2 -g -Wall -Werror -target bpf "-D__TARGET_ARCH_$arch" "-I/usr/include/$multiarch"
  "$@" -c "$src" -o "$out")
if [ -n "${BUILD_BPF_PRINT:-}" ]; then
  echo "${cmd[*]}"
  exit 0
fi
if [ ! -d "/usr/include/$multiarch" ]; then
  echo "build_bpf: /usr/include/$multiarch is missing: install linux-libc-dev (scripts/setup.sh)" >&2
  exit 1
fi
exec "${cmd[@]}"
