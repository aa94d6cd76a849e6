// Package realnode proves the operator runtime's auto pilot where pods
// really run: on the local cluster's real node (containerd, kubelet),
// an upgrade whose image really exits is rolled back by the operator, and
// the operator deployed from its image serves its metrics only to scrapers
// bound to the metrics-reader role (401 without a token, 403 without the
// role, 200 with it). It holds tests only; `go test -short` skips them,
// and they share one cluster on the machine's one real node
// (clustertest.SharedRealNode), each removing what it made.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages). Its tests
// may use the local cluster (cluster/clustertest).
package realnode
