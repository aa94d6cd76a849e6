//go:build tools

// Package peers pins what chartpilot's tests and benchmarks compare against,
// built from their Go modules, apart from what the local cluster runs
// (tools/): helm-operator-plugins' helm-operator (its module root is the main
// package) here; catalogd's storage in catalogd/; Helm 3 beside Helm 4 in
// helmcompat/.
package peers

import _ "github.com/operator-framework/helm-operator-plugins"
