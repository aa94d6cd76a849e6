// Package e2e runs the Helm operator runtime against the local cluster (a
// real control plane with controllers and kwok nodes, without OLM) for what
// an API server alone cannot show: Deployments that become ready, and an API
// server that goes away and comes back.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package e2e
