package release

import (
	"context"
	"errors"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Status is the state of a release relative to its request.
type Status string

const (
	// Absent: no release of that name exists (or only uninstalled ones).
	Absent Status = "Absent"
	// Locked: the latest revision is pending (install, upgrade, rollback or
	// uninstall): a previous operator process stopped in the middle of it.
	Locked Status = "Locked"
	// Failed: the latest revision failed.
	Failed Status = "Failed"
	// OutOfSync: deployed, from another chart or other values than requested.
	OutOfSync Status = "OutOfSync"
	// Drifted: deployed as requested, but objects in the cluster were
	// deleted or changed since.
	Drifted Status = "Drifted"
	// InSync: deployed as requested and the cluster matches.
	InSync Status = "InSync"
)

// State is what Observe saw.
type State struct {
	Status Status
	// Reason says why, for people.
	Reason string
	// Latest is the newest revision; Deployed the one currently deployed.
	// Either may be nil.
	Latest, Deployed *helmrelease.Release
	// Drift lists what differs in the cluster (Drifted).
	Drift []Drift
	// NotReady lists the release's objects that are not ready yet (kstatus);
	// set only when the release is in sync.
	NotReady []string
}

// Observe compares the release in Helm's storage and in the cluster with the
// request. It changes nothing.
func (c *Client) Observe(ctx context.Context, req *Request) (State, error) {
	cfg := c.actionConfig(req.Namespace)
	history, err := c.history(ctx, req.Namespace, req.Name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return State{}, fmt.Errorf("reading the history of release %s/%s: %w", req.Namespace, req.Name, err)
	}
	var st State
	for _, r := range history {
		if st.Latest == nil || r.Version > st.Latest.Version {
			st.Latest = r
		}
		if r.Info != nil && r.Info.Status == helmrelease.StatusDeployed && (st.Deployed == nil || r.Version > st.Deployed.Version) {
			st.Deployed = r
		}
	}
	if st.Latest == nil || st.Latest.Info == nil || st.Latest.Info.Status == helmrelease.StatusUninstalled {
		st.Status, st.Reason = Absent, "no release installed"
		return st, nil
	}
	latest := st.Latest
	switch latest.Info.Status {
	case helmrelease.StatusPendingInstall, helmrelease.StatusPendingUpgrade, helmrelease.StatusPendingRollback, helmrelease.StatusUninstalling:
		st.Status = Locked
		st.Reason = fmt.Sprintf("revision %d is %s: interrupted before it finished", latest.Version, latest.Info.Status)
		return st, nil
	case helmrelease.StatusFailed:
		st.Status = Failed
		st.Reason = fmt.Sprintf("revision %d failed: %s", latest.Version, latest.Info.Description)
		return st, nil
	}
	if st.Deployed == nil {
		// Superseded or unknown without a deployed revision: only an install helps.
		st.Status, st.Reason = Failed, fmt.Sprintf("revision %d is %s and none is deployed", latest.Version, latest.Info.Status)
		return st, nil
	}
	if got, want := st.Deployed.Labels[DigestLabel], req.Digest(); got != want {
		st.Status = OutOfSync
		st.Reason = "the chart or the values changed"
		if got == "" {
			st.Reason = "deployed without a chartpilot digest (adopted release)"
		}
		return st, nil
	}
	if !req.SkipDrift {
		drift, notReady, err := c.compare(ctx, cfg, st.Deployed)
		if err != nil {
			return st, err
		}
		st.NotReady = notReady
		if len(drift) > 0 {
			st.Status, st.Drift = Drifted, drift
			st.Reason = fmt.Sprintf("%d object(s) differ from revision %d: %s", len(drift), st.Deployed.Version, drift[0].String())
			return st, nil
		}
	}
	st.Status = InSync
	st.Reason = fmt.Sprintf("revision %d deployed as requested", st.Deployed.Version)
	return st, nil
}
