// Package values turns a custom resource's spec into a Helm release's values:
// the spec coalesced over the chart's values.yaml, the watch's overrideValues
// on top, checked against the chart's values.schema.json.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package values
