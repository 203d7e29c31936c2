#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, run and test Lace,
# and builds the BPF object. Idempotent: a second run only checks.
#   scripts/setup.sh          runtime + build needs (the demo)
#   scripts/setup.sh --tests  also the test tools (helm, kube-apiserver, etcd)
set -euo pipefail
cd "$(dirname "$0")/.."

DENO_VERSION=2.9.6
CACHE=${LACE_CACHE:-$HOME/.cache/lace}
want_tests=false
[ "${1:-}" = "--tests" ] && want_tests=true

say() { printf '[setup] %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  say "needs root (apt packages, bpffs, network namespaces): run it with sudo"
  exit 1
fi

packages=(clang llvm libbpf-dev libbpf1 bpftool iproute2 nftables iperf3 containernetworking-plugins
  etcd-server openssl ca-certificates npm procps util-linux)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Deno comes from npm (the package ships the binary), pinned.
deno="$CACHE/node_modules/.bin/deno"
if [ ! -x "$deno" ] || ! "$deno" --version 2>/dev/null | grep -q "deno $DENO_VERSION"; then
  say "installing deno $DENO_VERSION from npm into $CACHE"
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm install --no-audit --no-fund --silent "deno@$DENO_VERSION" >/dev/null)
fi
"$deno" --version | head -n 1 >&2

# bpffs: Lace pins its maps and links there.
if ! grep -q ' /sys/fs/bpf bpf ' /proc/self/mounts; then
  say "mounting bpffs at /sys/fs/bpf"
  mkdir -p /sys/fs/bpf
  mount -t bpf bpf /sys/fs/bpf
fi

say "building the BPF object"
"$deno" task -q bpf

say "caching dependencies from the lockfile"
"$deno" install -q --entrypoint main.ts >/dev/null

if $want_tests; then
  bash scripts/build_k8s_tools.sh
fi
