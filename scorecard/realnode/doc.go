// Package realnode runs the scorecard's tests that need pods that really
// run (chartpilot-backup-restore) on the local cluster's real node, with
// the operator image built and pushed to its registry as `make docker-build
// docker-push` would.
package realnode
