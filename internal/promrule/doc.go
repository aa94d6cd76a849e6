// Package promrule checks PrometheusRule objects (prometheus-operator's
// monitoring.coreos.com/v1 kind) and dashboard queries with Prometheus's own
// rule-file and PromQL parsers, so that an alert shipped with an operator
// loads in Prometheus rather than failing there, silently, at deploy time.
// It is build-time only: the operator runtime never imports it.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package promrule
