// Package chartload loads a chart as the runtime installs it: with Helm 4's
// loader of chart API v1 and v2, refusing what that loader would take
// silently as v2 although it is not (apiVersion v3, Helm 4's experimental
// chart API, and any other).
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package chartload
