#!/usr/bin/env bash
# Builds the real Kubernetes control plane and node used by the end-to-end tests (tests/kube/,
# tests/node/) and promtool for the monitoring tests from their Go modules, pinned in
# tests/k8s/go.mod, tests/containerd/go.mod and tests/promtool/go.mod, and caches the binaries
# outside the repository:
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/kube-apiserver-<version>/kube-apiserver
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/etcd-<version>/etcd
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/helm-<version>/helm
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/kubelet-<version>/kubelet
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/kube-controller-manager-<version>/kube-controller-manager
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/kube-scheduler-<version>/kube-scheduler
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/agnhost-<version>/agnhost       (static)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/pause-<version>/pause           (static, from C)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/containerd-<version>/{containerd,containerd-shim-runc-v2,ctr}
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/kubectl-<version>/kubectl       (for scripts/dev node)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/promtool-<version>/promtool     (checks the metrics'
#     names on a real scrape and unit-tests the chart's alerts: tests/metrics_lint_test.ts,
#     tests/chart_monitoring_test.ts)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/krew-<version>/krew             (installs `kubectl lace`
#     from a release's archive and manifest: tests/krew_release_test.ts)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/prometheus-operator-crds-<version>/*.yaml (the
#     ServiceMonitor, PodMonitor and PrometheusRule CRDs from the Prometheus Operator's module, for
#     tests/chart_monitoring_apply_test.ts)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/e2e.test-<version>/e2e.test     (upstream's e2e suite
#     for tests/node/conformance_test.ts and deno task conformance: it reuses much of the
#     kubelet's build, so it is built last)
#   ${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}/ginkgo-<version>/ginkgo         (runs e2e.test's specs
#     in parallel; built with e2e.test)
# A binary already in the cache is reused, so only the first run on a machine pays (how long,
# on which machine: docs/testing.md). Safe to run concurrently and repeatedly.
#
# Usage: scripts/build_k8s_tools.sh [kube-apiserver|etcd|helm|kubelet|kubectl|agnhost|pause|containerd
#        |promtool|krew|prometheus-operator-crds|e2e.test ...]   (default: all of them; scripts/setup.sh --tests runs it so)
set -euo pipefail

HELM_VERSION=v3.22.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module_dir="$repo/tests/k8s"
cache=${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}

if ! command -v go >/dev/null 2>&1; then
  for candidate in /usr/local/go/bin /usr/lib/go/bin; do
    if [ -x "$candidate/go" ]; then PATH="$candidate:$PATH"; fi
  done
fi
if ! command -v go >/dev/null 2>&1; then
  echo "build_k8s_tools: go not found on PATH; install Go 1.26 or newer" >&2
  exit 1
fi

mkdir -p "$cache"
exec 9>"$cache/.build.lock"
flock 9

# The version of a module as resolved in tests/k8s/go.mod.
module_version() {
  (cd "$module_dir" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' "$1")
}

# build NAME VERSION COMMAND...: runs COMMAND with $out set to a scratch directory, then
# moves the result to the cache; skipped when the cached binary already exists.
build() {
  local name=$1 version=$2
  shift 2
  local dest="$cache/$name-$version"
  if [ -x "$dest/$name" ]; then
    echo "build_k8s_tools: $name $version cached at $dest/$name"
    return
  fi
  local scratch
  scratch=$(mktemp -d "$cache/.$name-$version.XXXXXX")
  local start=$SECONDS
  echo "build_k8s_tools: building $name $version"
  if ! out=$scratch "$@"; then
    rm -rf "$scratch"
    echo "build_k8s_tools: building $name $version failed (see the go output above)" >&2
    return 1
  fi
  rm -rf "$dest"
  mv "$scratch" "$dest"
  chmod 755 "$dest"
  echo "build_k8s_tools: built $name $version in $((SECONDS - start)) s at $dest/$name"
}

# Linker flags that stamp a Kubernetes binary with its release, as the release build does.
version_ldflags() {
  local version=$1 minor pkg
  minor=$(echo "$version" | cut -d. -f2)
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  echo "$ldflags"
}

build_kube_apiserver() {
  local version=$1
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="$(version_ldflags "$version")" -o "$out/kube-apiserver" \
    k8s.io/kubernetes/cmd/kube-apiserver)
}

# A command of k8s.io/kubernetes (kubelet, kube-controller-manager, kube-scheduler), stamped with
# its release like kube-apiserver.
build_kube_command() {
  local name=$1 version=$2
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="$(version_ldflags "$version")" -o "$out/$name" \
    "k8s.io/kubernetes/cmd/$name")
}

# agnhost, the Kubernetes test image's server, static so that it runs alone in an image.
build_agnhost() {
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="-s -w" -o "$out/agnhost" k8s.io/kubernetes/test/images/agnhost)
}

# The pause container from the kubernetes module's own C source, static like upstream's.
build_pause() {
  local version=$1 src
  src="$(cd "$module_dir" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
  local compiler
  compiler=$(command -v cc || command -v clang)
  "$compiler" -Os -Wall -Werror -static -DVERSION="lace-$version" -o "$out/pause" "$src"
  strip "$out/pause"
}

# containerd 2 with its runc shim and ctr, pinned in tests/containerd/go.mod. no_btrfs: the
# btrfs snapshotter needs C headers the node does not use.
build_containerd() {
  local version=$1 cmd
  local ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$version"
  for cmd in containerd containerd-shim-runc-v2 ctr; do
    (cd "$repo/tests/containerd" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
      go build -trimpath -tags no_btrfs -ldflags="$ldflags" -o "$out/$cmd" \
      "github.com/containerd/containerd/v2/cmd/$cmd") || return 1
  done
}

# Upstream's e2e suite (test/e2e) as one test binary from the same module and version as the
# kubelet, stamped with its release so that its version checks see the node's.
build_e2e_test() {
  local version=$1
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go test -c -trimpath -ldflags="$(version_ldflags "$version")" -o "$out/e2e.test" \
    k8s.io/kubernetes/test/e2e)
}

# The ginkgo CLI at the version the e2e suite is built with, to run its specs in parallel.
build_ginkgo() {
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="-s -w" -o "$out/ginkgo" github.com/onsi/ginkgo/v2/ginkgo)
}

# promtool from Prometheus' module, stamped with the release its v0.3xx.y module version stands
# for (v0.316.0 is 3.16.0), as Prometheus' release build does.
build_promtool() {
  local version=$1 release minor
  minor=${version#v0.}
  release="${minor:0:1}.$((10#${minor:1:2})).${minor#*.}"
  (cd "$repo/tests/promtool" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="-s -w -X github.com/prometheus/common/version.Version=$release" \
    -o "$out/promtool" github.com/prometheus/prometheus/cmd/promtool)
}

# krew from its own module, pinned in tests/krew/go.mod, stamped with its release as krew's
# build does.
build_krew() {
  local version=$1
  (cd "$repo/tests/krew" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version" \
    -o "$out/krew" sigs.k8s.io/krew/cmd/krew)
}

# The CRDs of the kinds the chart renders, as the Prometheus Operator's release ships them, from
# its module (no build: cached like a built tool, moved into place whole).
fetch_prometheus_operator_crds() {
  local version=$1 dest="$cache/prometheus-operator-crds-$1" dir scratch kind
  if [ -f "$dest/monitoring.coreos.com_prometheusrules.yaml" ]; then
    echo "build_k8s_tools: prometheus-operator-crds $version cached at $dest"
    return
  fi
  dir=$(GOFLAGS=-mod=mod go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  scratch=$(mktemp -d "$cache/.prometheus-operator-crds-$version.XXXXXX")
  for kind in servicemonitors podmonitors prometheusrules; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$scratch/" ||
      { rm -rf "$scratch"; return 1; }
  done
  chmod -R u+w,a+rX "$scratch"
  rm -rf "$dest"
  mv "$scratch" "$dest"
  echo "build_k8s_tools: prometheus-operator-crds $version at $dest"
}

build_etcd() {
  (cd "$module_dir" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags="-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(etcd helm kube-apiserver pause containerd kubelet kube-controller-manager kube-scheduler
    agnhost kubectl promtool krew prometheus-operator-crds e2e.test)
fi
total=$SECONDS
for target in "${targets[@]}"; do
  case $target in
    kube-apiserver)
      v=$(module_version k8s.io/kubernetes)
      build kube-apiserver "$v" build_kube_apiserver "$v"
      ;;
    etcd)
      v=$(module_version go.etcd.io/etcd/server/v3)
      build etcd "$v" build_etcd
      ;;
    kubelet | kube-controller-manager | kube-scheduler | kubectl)
      v=$(module_version k8s.io/kubernetes)
      build "$target" "$v" build_kube_command "$target" "$v"
      ;;
    e2e.test)
      v=$(module_version k8s.io/kubernetes)
      build e2e.test "$v" build_e2e_test "$v"
      v=$(module_version github.com/onsi/ginkgo/v2)
      build ginkgo "$v" build_ginkgo
      ;;
    agnhost)
      v=$(module_version k8s.io/kubernetes)
      build agnhost "$v" build_agnhost
      ;;
    pause)
      v=$(module_version k8s.io/kubernetes)
      build pause "$v" build_pause "$v"
      ;;
    containerd)
      v=$(cd "$repo/tests/containerd" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' \
        github.com/containerd/containerd/v2)
      build containerd "$v" build_containerd "$v"
      ;;
    promtool)
      v=$(cd "$repo/tests/promtool" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' \
        github.com/prometheus/prometheus)
      build promtool "$v" build_promtool "$v"
      ;;
    krew)
      v=$(cd "$repo/tests/krew" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' sigs.k8s.io/krew)
      build krew "$v" build_krew "$v"
      ;;
    prometheus-operator-crds)
      fetch_prometheus_operator_crds "$PROMETHEUS_OPERATOR_VERSION"
      ;;
    # The one helm recipe (same cache path; stamps the Kubernetes version helm renders for).
    helm)
      start=$SECONDS
      HELM_VERSION="$HELM_VERSION" LACE_TOOLS_CACHE="$cache" bash "$repo/scripts/install_helm.sh" >/dev/null
      echo "build_k8s_tools: helm $HELM_VERSION ready in $((SECONDS - start)) s"
      ;;
    *)
      echo "build_k8s_tools: unknown tool \"$target\"; use kube-apiserver, etcd, helm, kubelet," \
        "kubectl, kube-controller-manager, kube-scheduler, agnhost, pause, containerd, promtool," \
        "prometheus-operator-crds or e2e.test" >&2
      exit 2
      ;;
  esac
done
echo "build_k8s_tools: done in $((SECONDS - total)) s (cache: $cache)"
