// Package watches reads watches.yaml, the file that tells a Helm operator
// which custom resource kind is reconciled with which chart. The format is
// operator-sdk's, so existing Helm operator projects move over unchanged; unlike
// peers, every field is honoured and an unknown field is an error.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package watches
