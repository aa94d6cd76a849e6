// Package scorecard is chartpilot's embedded scorecard: operator-sdk's
// scorecard tests run in-process against a registry+v1 bundle, without test
// pods, images or a cluster for the static ones.
//
// A bundle's tests/scorecard/config.yaml (operator-sdk's
// scorecard.operatorframework.io/v1alpha3 Configuration) chooses the tests and
// their stages; each entry maps to a built-in test by its entrypoint
// ("scorecard-test NAME") or its "test" label. Without a config file the
// built-in default set runs.
//
// The static tests keep operator-sdk's names and semantics (basic-check-spec,
// olm-bundle-validation, olm-crds-have-validation, olm-crds-have-resources,
// olm-spec-descriptors, olm-status-descriptors). The chartpilot suite runs on
// a cluster: it installs the bundle's CRDs and RBAC in a fresh namespace, runs
// chartpilot's Helm operator in-process as the bundle's ServiceAccount, and
// checks install, upgrade from a previous bundle, uninstall and that the
// CSV's permissions suffice. Results are v1alpha3 TestLists, written as text,
// JSON or xUnit.
//
// Stage bundle of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (catalog, olm, cluster, apply, doctor,
// cmd/).
package scorecard
