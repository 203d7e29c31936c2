#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, run and test Lace,
# and builds the BPF object. Idempotent: a second run only checks.
#   scripts/setup.sh          runtime + build needs (the demo)
#   scripts/setup.sh --tests  also the test tools (helm, kube-apiserver, etcd, the real node:
#                             kubelet, containerd, runc, the controller manager and scheduler,
#                             promtool for the monitoring tests, krew for the kubectl plugin's
#                             release, upstream's e2e.test with ginkgo
#                             for tests/node/conformance_test.ts, and systemd-nspawn for the
#                             systemd unit's test)
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

packages=(clang llvm unzip curl libbpf-dev libbpf1 bpftool iproute2 nftables iperf3 containernetworking-plugins
  openssl ca-certificates procps util-linux)
# npm brings Deno; a machine with Node.js from elsewhere already has it, and Debian's npm
# package would conflict with that Node.js.
command -v npm >/dev/null 2>&1 || packages+=(npm)

# Installs the Debian packages given that are not installed yet.
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
install_missing "${packages[@]}"

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
"$deno" install -q --entrypoint main.ts lib/cli/commands.ts lib/kube/client_node.ts >/dev/null  # both imported by a variable

say "bundling the parts of the Kubernetes client Lace uses"
"$deno" task -q bundle

# Go builds the Kubernetes test tools (tests/k8s/go.mod wants 1.26); Debian 12's golang is
# too old. Without a recent enough Go, take the toolchain from the Go module proxy, where the
# go command itself gets toolchains (golang.org/toolchain).
ensure_go() {
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go "$CACHE/go/bin/go"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    if "$candidate" version | grep -qE 'go1\.(2[6-9]|[3-9][0-9])'; then
      export PATH="$(dirname "$candidate"):$PATH"
      return
    fi
  done
  local version=go1.26.8 proxy=${GOPROXY:-https://proxy.golang.org} arch
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) say "no Go toolchain known for $(uname -m): install Go 1.26+ and run again"; exit 1 ;;
  esac
  proxy=${proxy%%,*}
  say "installing Go $version from the Go module proxy into $CACHE/go"
  local zip
  zip=$(mktemp)
  curl -fsSL "$proxy/golang.org/toolchain/@v/v0.0.1-$version.linux-$arch.zip" -o "$zip"
  rm -rf "$CACHE/go" "$CACHE/.go-unpack" && mkdir -p "$CACHE/.go-unpack"
  unzip -q "$zip" -d "$CACHE/.go-unpack" && rm -f "$zip"
  mv "$CACHE/.go-unpack/golang.org/toolchain@v0.0.1-$version.linux-$arch" "$CACHE/go"
  rm -rf "$CACHE/.go-unpack"
  export PATH="$CACHE/go/bin:$PATH"
}

if $want_tests; then
  # The real node's runtime (tests/node/): Debian's runc under containerd; socat relays the
  # node namespace's API server to the test process. zsh and fish run the completion scripts
  # `lace completion` writes (tests/cli_completion_test.ts).
  install_missing runc socat zsh fish
  # systemd-nspawn boots a machine with systemd as PID 1 for the unit's test
  # (tests/systemd_unit_test.ts).
  install_missing systemd-container
  ensure_go
  bash scripts/build_k8s_tools.sh
fi
