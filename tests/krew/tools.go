//go:build tools

// Package tools records the command built from this module, so that `go mod tidy` keeps its
// dependencies in go.sum.
package tools

import (
	// krew, which installs `kubectl lace` from a release's archive and manifest
	// (tests/krew_release_test.ts).
	_ "sigs.k8s.io/krew/cmd/krew"
)
