//go:build tools

// Package tools records the containerd commands built for the real node of Lace's
// end-to-end tests (scripts/build_k8s_tools.sh, tests/node/), so that `go mod tidy` keeps
// their dependencies in go.sum. The kubelet of tests/k8s (1.36 and newer) needs containerd 2.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
