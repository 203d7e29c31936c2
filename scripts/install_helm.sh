#!/usr/bin/env bash
# Builds helm from source with the Go toolchain into a cache outside the repository and prints the
# binary's path on stdout. The first build takes a few minutes; later runs reuse the cached binary.
#
#   helm=$(scripts/install_helm.sh)      # e.g. /root/.cache/lace/tools/helm-v3.22.0/helm
#
# This is the one recipe for helm: scripts/build_k8s_tools.sh, CI and tests/helpers/helm.ts use the
# same cache path. Environment: LACE_TOOLS_CACHE (default ~/.cache/lace/tools), HELM_VERSION.
set -euo pipefail

version="${HELM_VERSION:-v3.22.0}"
cache="${LACE_TOOLS_CACHE:-$HOME/.cache/lace/tools}"
dest="$cache/helm-$version"

if [[ -x "$dest/helm" ]]; then
  echo "$dest/helm"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  for candidate in /usr/local/go/bin /usr/lib/go/bin; do
    if [[ -x "$candidate/go" ]]; then PATH="$candidate:$PATH"; fi
  done
fi
if ! command -v go >/dev/null 2>&1; then
  echo "install_helm.sh: go not found on PATH; install Go 1.24 or newer to build helm $version" >&2
  exit 1
fi

mkdir -p "$cache"
# Two concurrent runs build once: the second waits, then finds the binary.
exec 8>"$cache/.helm-$version.lock"
flock 8
if [[ -x "$dest/helm" ]]; then
  echo "$dest/helm"
  exit 0
fi

scratch=$(mktemp -d "$cache/.helm-$version.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "install_helm.sh: building helm $version (a few minutes the first time)" >&2
# helm's release build stamps the Kubernetes version it was built against (its client-go minor):
# `helm template` and `helm lint` render for that version. `go install` alone would leave 1.20.
gomod=$(GOFLAGS=-mod=mod go mod download -json "helm.sh/helm/v3@$version" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
kube_minor=$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod" | head -n 1)
if [[ -z "$kube_minor" ]]; then
  echo "install_helm.sh: cannot read helm $version's client-go version from $gomod" >&2
  exit 1
fi
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kube_minor"
done
GOBIN="$scratch" GOFLAGS="-buildvcs=false" CGO_ENABLED=0 \
  go install -trimpath -ldflags="$ldflags" "helm.sh/helm/v3/cmd/helm@$version" >&2
# Rename into place so a reader never sees a half-built binary.
chmod 755 "$scratch"
rm -rf "$dest"
mv "$scratch" "$dest"
trap - EXIT
echo "install_helm.sh: $("$dest/helm" version --short) at $dest/helm" >&2
echo "$dest/helm"
