// Package clustertest gives tests a real cluster: the whole local cluster with
// OLM for end-to-end tests (one per test binary, through Main), or envtest's
// API server alone on the same etcd and kube-apiserver binaries for
// integration tests that need nothing more.
//
// `go test -short` is the fast tier: it starts neither. Main then runs the
// tests without a cluster, StartAPIServer skips its test, and every test
// that needs a cluster or API server started elsewhere (a TestMain of its
// own) calls SkipIfShort first. Such a TestMain checks testing.Short itself,
// after flag.Parse.
//
// A fixture for tests: only tests import it; no package's code does.
package clustertest
