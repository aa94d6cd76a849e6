// Package pull fetches a packaged chart from a Helm chart repository or an
// OCI registry, as `helm pull` does, for package chart to load.
//
// It stands apart from package chart because Helm's repository and registry
// clients bring Helm's plugin runtime (wazero) and, through kustomize, Go's
// plugin package: what only loads and renders charts (the local cluster
// renders OLM's chart) does not carry them. Its tests live in package
// chart's folder, whose test binary links them anyway.
//
// Stage chart of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (rbac, scaffold, bundle, scorecard,
// catalog, olm, cluster, apply, doctor, cmd/).
package pull
