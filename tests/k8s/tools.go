//go:build tools

// Package tools records the commands built from this module, so that
// `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	// etcd at the release Kubernetes itself pins and tests with.
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	// The node (tests/node/): the kubelet; the controller manager and scheduler that turn a
	// DaemonSet into a pod bound to the node; agnhost for the test pods.
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/images/agnhost"
	// scripts/dev node's kubectl, and upstream's e2e suite (tests/node/conformance.ts).
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/test/e2e"
	_ "github.com/onsi/ginkgo/v2/ginkgo"
)
