// Package release keeps one Helm release in the state its custom resource
// asks for.
//
// Observing is apart from acting: Observe looks at Helm's storage and the
// cluster and returns a State (Absent, Locked, Failed, OutOfSync, Drifted,
// InSync) with its reason, changing nothing. Each action (Install, Upgrade,
// Unlock, Rollback, Uninstall, Repair) is a small type that changes one thing.
// Reconcile is the one orchestrator: it observes, picks the action for the
// state, runs it, and observes again, until the release is in sync or an
// action fails.
//
// Whether the release needs an upgrade is decided by a digest of the chart
// and the values, stored as a label on the release: a reconcile of a release
// in sync runs no Helm action and no dry run.
package release
