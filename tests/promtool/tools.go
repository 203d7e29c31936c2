//go:build tools

// Package tools records promtool, built for Lace's monitoring tests (scripts/build_k8s_tools.sh):
// `promtool check metrics` on a real scrape of the agent and of lace netcheck, and
// `promtool test rules` on the chart's alerts, so that `go mod tidy` keeps its dependencies
// in go.sum.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
