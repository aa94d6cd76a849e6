// Package release keeps one Helm release in the state its custom resource
// asks for.
//
// Observing is apart from acting: Observe looks at Helm's storage and the
// cluster and returns a State (Absent, Locked, Failed, OutOfSync, Drifted,
// InSync, and the health gate's Watching, Unverified, Unhealthy, Rejected)
// with its reason, changing nothing. Each action (Install, Upgrade,
// Unlock, Rollback, Uninstall, Repair, Verify) is a small type that changes
// one thing.
// Reconcile is the one orchestrator: it observes, picks the action for the
// state, runs it, and observes again, until the release is in sync or an
// action fails.
//
// Whether the release needs an upgrade is decided by a digest of the chart
// and the values, stored as a label on the release: a reconcile of a release
// in sync runs no Helm action and no dry run.
//
// With a health deadline (Request.HealthDeadline), each new revision is
// gated (gate.go): Watching until its deadline, then recorded healthy
// (Unverified, action verify) or, if it regressed or is not healthy by then,
// rolled back to the last revision recorded healthy (Unhealthy, action
// rollbackUnhealthy). The verdict is a label on the revision's record, so
// the rolled back request stays Rejected, without retries, until the CR's
// generation or the chart changes.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package release
