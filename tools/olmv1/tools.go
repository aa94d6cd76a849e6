//go:build tools

// Package tools pins OLM v1 (catalogd and operator-controller), built by
// `chartpilot cluster up --olm=v1` (see cluster/toolchain). A module of its
// own: operator-controller's Kubernetes line (k8s.io v0.32,
// controller-runtime v0.20) is not the cluster's.
package tools

import (
	_ "github.com/operator-framework/operator-controller/cmd/catalogd"
	_ "github.com/operator-framework/operator-controller/cmd/operator-controller"
)
