package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/operator/health"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// Status is the state of a release relative to its request.
type Status string

const (
	// Absent: no release of that name exists (or only uninstalled ones).
	Absent Status = "Absent"
	// Locked: the latest revision is pending (install, upgrade, rollback or
	// uninstall): a previous operator process stopped in the middle of it.
	Locked Status = "Locked"
	// Failed: the latest revision failed, or none is deployed.
	Failed Status = "Failed"
	// OutOfSync: deployed, from another chart or other values than requested.
	OutOfSync Status = "OutOfSync"
	// Drifted: deployed as requested, but objects in the cluster were
	// deleted or changed since.
	Drifted Status = "Drifted"
	// InSync: deployed as requested and the cluster matches.
	InSync Status = "InSync"
	// Watching: deployed as requested, the cluster matches, and the
	// revision is within its health deadline (see Request.HealthDeadline):
	// not known healthy yet, nothing failed that warrants a rollback.
	// Nothing to do before State.VerifyAt unless an object fails first.
	Watching Status = "Watching"
	// Unverified: deployed as requested and healthy at its health
	// deadline, not yet recorded healthy (HealthLabel).
	Unverified Status = "Unverified"
	// Unhealthy: deployed as requested but its objects regressed
	// (CrashLoopBackOff, ProgressDeadlineExceeded, a failed Job) or were not
	// healthy by the deadline, and a revision recorded healthy exists to
	// roll back to (State.LastHealthy).
	Unhealthy Status = "Unhealthy"
	// Rejected: the request's chart and values were rolled back as
	// unhealthy at this generation of the CR. The revision deployed (the
	// last healthy one) is kept, and compared with the cluster as if in
	// sync, until the CR's spec or the chart changes.
	Rejected Status = "Rejected"
)

// Settled reports whether a release in this state needs no action now:
// Reconcile returns without error in these states.
func (s Status) Settled() bool {
	return s == InSync || s == Watching || s == Rejected
}

// State is what Observe saw.
type State struct {
	Status Status
	// Reason says why, for people.
	Reason string
	// Latest is the newest revision; Deployed the one currently deployed.
	// Either may be nil.
	Latest, Deployed *helmrelease.Release
	// LastGood is the revision a failed upgrade rolls back to: Deployed or,
	// when none is, the newest superseded one. Helm supersedes the old
	// revision before it marks the new one deployed, so a crash in between
	// leaves a live release with no deployed revision.
	LastGood *helmrelease.Release
	// EverDeployed says the history proves the release was deployed once: a
	// revision is deployed or superseded, or one is newer than the first
	// install. Recovery never uninstalls such a release: its objects (and
	// the data of its volumes) are live.
	EverDeployed bool
	// Drift lists what differs in the cluster (Drifted).
	Drift []Drift
	// NotReady lists the release's objects that are not ready yet (kstatus);
	// set only when the release is in sync.
	NotReady []string
	// Kinds are the kinds of the deployed revision's objects, once each;
	// set when the release was compared with the cluster.
	Kinds []schema.GroupVersionKind
	// Problems say which objects (and pods of workloads) are not healthy
	// and why, in no order; set only when the release is in sync.
	Problems []health.Problem
	// LastHealthy is the newest revision but the deployed one recorded
	// healthy (HealthLabel), superseded or deployed: what an unhealthy
	// upgrade rolls back to. Nil when none is.
	LastHealthy *helmrelease.Release
	// VerifyAt is when a Watching revision's health deadline passes.
	VerifyAt time.Time
}

// Observe compares the release in Helm's storage and in the cluster with the
// request. It changes nothing.
func (c *Client) Observe(ctx context.Context, req *Request) (State, error) {
	history, err := c.history(ctx, req.Namespace, req.Name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return State{}, fmt.Errorf("reading the history of release %s/%s: %w", req.Namespace, req.Name, err)
	}
	st := assessRequest(history, req.Digest(), req.Generation)
	if st.Status != InSync && st.Status != Rejected || req.SkipDrift {
		return st, nil
	}
	found, err := c.compare(ctx, c.actionConfig(req.Namespace), st.Deployed)
	if err != nil {
		return st, err
	}
	st.NotReady, st.Problems, st.Kinds = found.notReady, found.problems, found.kinds
	if len(found.drift) > 0 {
		drifted(&st, found.drift)
		return st, nil
	}
	if st.Status == InSync {
		gate(&st, req.HealthDeadline, c.clock())
	}
	return st, nil
}

// assessRequest is assess, and Rejected for a request whose chart and
// values were rolled back as unhealthy at this generation of the CR.
func assessRequest(history []*helmrelease.Release, digest string, generation int64) State {
	st := assess(history, digest)
	if st.Status == OutOfSync {
		if bad := rejection(history, digest, generation); bad != nil {
			st.Status = Rejected
			st.Reason = fmt.Sprintf("revision %d (the requested chart and values) was rolled back: %s; not retried until the CR's spec or the chart changes", bad.Version, bad.Info.Description)
		}
	}
	return st
}

// drifted marks a deployed release Drifted by what differs in the cluster.
func drifted(st *State, drift []Drift) {
	st.Status, st.Drift = Drifted, drift
	st.Reason = fmt.Sprintf("%d object(s) differ from revision %d: %s", len(drift), st.Deployed.Version, drift[0].String())
}

// assess classifies a release's history against the digest of the request,
// without looking at the cluster: a release found InSync here may still
// have drifted.
func assess(history []*helmrelease.Release, digest string) State {
	var st State
	for _, r := range history {
		if r.Info == nil {
			continue
		}
		if st.Latest == nil || r.Version > st.Latest.Version {
			st.Latest = r
		}
		switch r.Info.Status {
		case releasecommon.StatusDeployed:
			if st.Deployed == nil || r.Version > st.Deployed.Version {
				st.Deployed = r
			}
			st.EverDeployed = true
		case releasecommon.StatusSuperseded:
			if st.LastGood == nil || r.Version > st.LastGood.Version {
				st.LastGood = r
			}
			st.EverDeployed = true
		}
	}
	if st.Deployed != nil {
		st.LastGood = st.Deployed
	}
	st.LastHealthy = lastHealthy(history, st.Deployed)
	latest := st.Latest
	if latest == nil || latest.Info.Status == releasecommon.StatusUninstalled {
		st.Status, st.Reason = Absent, "no release installed"
		return st
	}
	// Only an install writes revision 1: anything later is an upgrade or a
	// rollback of a release that was deployed.
	st.EverDeployed = st.EverDeployed || latest.Version > 1
	switch latest.Info.Status {
	case releasecommon.StatusPendingInstall, releasecommon.StatusPendingUpgrade, releasecommon.StatusPendingRollback, releasecommon.StatusUninstalling:
		st.Status = Locked
		st.Reason = fmt.Sprintf("revision %d is %s: interrupted before it finished", latest.Version, latest.Info.Status)
		return st
	case releasecommon.StatusFailed:
		st.Status = Failed
		st.Reason = fmt.Sprintf("revision %d failed: %s", latest.Version, latest.Info.Description)
		return st
	}
	if st.Deployed == nil {
		st.Status, st.Reason = Failed, fmt.Sprintf("revision %d is %s and none is deployed", latest.Version, latest.Info.Status)
		return st
	}
	if got := st.Deployed.Labels[DigestLabel]; got != digest {
		st.Status = OutOfSync
		st.Reason = "the chart or the values changed"
		if got == "" {
			st.Reason = "deployed without a chartpilot digest (adopted release)"
		}
		return st
	}
	st.Status = InSync
	st.Reason = fmt.Sprintf("revision %d deployed as requested", st.Deployed.Version)
	return st
}
