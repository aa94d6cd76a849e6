// Package chart loads a Helm chart from a directory or a packaged .tgz
// (Pull fetches one from a chart repository or an OCI registry),
// resolves and vendors its local (file://) dependencies, and renders it
// client-side with real Helm actions, the way `helm template` does, so that
// the scaffolder and the RBAC derivation see exactly what an install creates.
//
// A Chart is loaded afresh for every render: Helm's dependency processing
// prunes disabled subcharts from the chart it is given, so one loaded chart
// must not serve renders with different values.
package chart
