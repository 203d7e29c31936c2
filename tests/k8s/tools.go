//go:build tools

// Package tools records the commands built from this module, so that
// `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	// etcd at the release Kubernetes itself pins and tests with.
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
