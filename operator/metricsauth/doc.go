// Package metricsauth serves the operator's metrics to Prometheus alone:
// Filter checks a scraper's token and permission with the API server (a
// TokenReview and a SubjectAccessReview, cached, shared by concurrent
// requests and bounded in rate), and the package defines
// what that takes in RBAC: the rules the operator needs for the reviews,
// and the rule a scraper needs. The runtime (package operator), the
// derived RBAC (package rbac) and the scaffolded config/rbac import them
// from here.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package metricsauth
