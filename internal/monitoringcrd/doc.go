// Package monitoringcrd gives CRDs for prometheus-operator's ServiceMonitor
// and PrometheusRule (monitoring.coreos.com/v1) with an open spec, for
// clusters where no prometheus-operator runs but those kinds must be served:
// the local cluster (OLM fails the install of a bundle that ships them
// otherwise, and `chartpilot init`'s bundles do) and test API servers that
// apply a project's config/default. The API server keeps the objects as
// written; checking them is Prometheus's job (package promrule).
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package monitoringcrd
