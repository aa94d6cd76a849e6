// Package chartpilot is the example operator that this repository's top
// level is the project of: it embeds the operator's chart (helm-charts/hello,
// as `chartpilot init` vendors it) and the files that change in its next
// release (example/hello-0.2.0), which the demo publishes to show OLM
// upgrading the operator. They are embedded so the demo runs from anywhere.
//
// Stage chart of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (rbac, scaffold, bundle, scorecard,
// catalog, olm, cluster, apply, doctor, cmd/).
package chartpilot
