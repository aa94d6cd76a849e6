//go:build tools

// Package tools pins OLM v1 (catalogd and operator-controller) v1.11, built
// by `chartpilot cluster up --olm=v1` (see cluster/toolchain). A module of
// its own on the cluster module's Kubernetes line and versions (see
// TestToolsModulesOnTheClusterLine), so the packages they share compile
// once. operator-controller imports pkg.package-operator.run/boxcutter,
// which the module proxy does not serve: ./boxcutter replaces it (see its
// managedcache package).
package tools

import (
	_ "github.com/operator-framework/operator-controller/cmd/catalogd"
	_ "github.com/operator-framework/operator-controller/cmd/operator-controller"
)
