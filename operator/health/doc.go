// Package health tells which objects of a release are not healthy and why:
// a pod in CrashLoopBackOff with its last termination, an image that cannot
// be pulled, a rollout past its progress deadline, a claim not bound, a Job
// that failed. It is pure: it reads objects the caller has (from an informer
// cache) and changes nothing, so the operator can run it on every reconcile
// of a release that is not ready without a request to the API server.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package health
