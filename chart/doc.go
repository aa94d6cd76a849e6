// Package chart loads a Helm chart from a directory or a packaged .tgz
// (package chart/pull fetches one from a chart repository or an OCI
// registry), resolves and vendors its local (file://) dependencies, and
// renders it client-side with real Helm actions, the way `helm template`
// does, so that the scaffolder and the RBAC derivation see exactly what an
// install creates.
//
// Helm's dependency processing prunes disabled subcharts from the chart it is
// given, so each render works on its own copy of the chart's tree. A Renderer
// loads a chart once for many renders and parses each distinct template
// output once: rendering with Helm's engine is fast, parsing the output (a
// chart's CRDs are often megabytes) is not.
//
// Stage chart of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (rbac, scaffold, bundle, scorecard,
// catalog, olm, cluster, apply, doctor, cmd/).
package chart
