//go:build tools

// Package peers pins the operators chartpilot's runtime benchmark compares
// against, built from their Go modules: helm-operator-plugins' helm-operator
// (its module root is the main package).
package peers

import _ "github.com/operator-framework/helm-operator-plugins"
