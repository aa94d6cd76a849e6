package release

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/chartpilot/chartpilot/operator/health"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Labels of release revisions (Secret labels, beside DigestLabel) that the
// health gate reads and writes. They live on the revision itself, so they
// survive a restart of the operator and are copied by Helm onto the
// revision a rollback makes.
const (
	// HealthLabel records what the health gate found of a revision:
	// HealthHealthy or HealthUnhealthy. A revision without it was not
	// judged yet (or was deployed with the gate off).
	HealthLabel = "chartpilot/health"
	// GenerationLabel is the CR's metadata.generation when the revision
	// was made.
	GenerationLabel = "chartpilot/generation"
)

// Values of HealthLabel.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// regressions are the problems that condemn a revision at once, within its
// deadline: they do not go away by waiting. An image pull failing or an
// object not ready yet may still recover, so they count only at the
// deadline.
var regressions = map[string]bool{
	"CrashLoopBackOff":                    true,
	health.ReasonProgressDeadlineExceeded: true,
	health.ReasonJobFailed:                true,
}

// gate judges the health of a revision deployed as requested and in sync
// with the cluster (st.Status InSync, with its NotReady and Problems): it
// may be Watching, Unverified or Unhealthy instead. A revision already
// recorded healthy stays InSync: once proven, later trouble is reported
// (status health) but not rolled back. A revision that fails with no
// healthy one to return to (a first install) stays InSync too: there is
// nothing better to run.
func gate(st *State, deadline time.Duration, now time.Time) {
	d := st.Deployed
	if deadline <= 0 || d == nil || d.Info == nil || d.Labels[HealthLabel] == HealthHealthy {
		return
	}
	verifyAt := d.Info.LastDeployed.Add(deadline)
	age := now.Sub(d.Info.LastDeployed).Round(time.Second)
	failing := failures(st.Problems)
	switch {
	case d.Labels[HealthLabel] == HealthUnhealthy && st.LastHealthy != nil:
		// Recorded unhealthy, but the rollback did not happen (it failed,
		// or the operator stopped in between).
		st.Status = Unhealthy
		st.Reason = fmt.Sprintf("revision %d was found unhealthy; rolling back to revision %d", d.Version, st.LastHealthy.Version)
	case len(failing) > 0 && st.LastHealthy != nil:
		st.Status = Unhealthy
		st.Reason = fmt.Sprintf("revision %d failed %s after its deployment: %s", d.Version, age, problemList(failing))
	case now.Before(verifyAt):
		st.Status, st.VerifyAt = Watching, verifyAt
		st.Reason = fmt.Sprintf("revision %d deployed as requested, watched until %s (health deadline %s)", d.Version, verifyAt.UTC().Format(time.RFC3339), deadline)
	case len(st.NotReady) == 0 && len(st.Problems) == 0:
		st.Status = Unverified
		st.Reason = fmt.Sprintf("revision %d healthy at its health deadline (%s)", d.Version, deadline)
	case st.LastHealthy != nil:
		st.Status = Unhealthy
		st.Reason = fmt.Sprintf("revision %d not healthy %s after its deployment (health deadline %s): %s", d.Version, age, deadline, notHealthy(st))
	}
}

// failures are the problems among ps that condemn a revision at once.
func failures(ps []health.Problem) []health.Problem {
	var out []health.Problem
	for _, p := range ps {
		if regressions[p.Reason] {
			out = append(out, p)
		}
	}
	return out
}

// notHealthy says what keeps a release from being healthy: its problems,
// else the objects not ready.
func notHealthy(st *State) string {
	if len(st.Problems) > 0 {
		return problemList(st.Problems)
	}
	return strings.Join(st.NotReady, "; ")
}

// problemList names at most three problems, the most severe first.
func problemList(ps []health.Problem) string {
	s := health.Summarize(ps)
	var parts []string
	for i, p := range s.Problems {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", s.Unhealthy-3))
			break
		}
		parts = append(parts, p.String())
	}
	return strings.Join(parts, "; ")
}

// lastHealthy is the newest revision recorded healthy that is deployed or
// superseded, other than the deployed one: the one an unhealthy upgrade
// returns to.
func lastHealthy(history []*helmrelease.Release, deployed *helmrelease.Release) *helmrelease.Release {
	var best *helmrelease.Release
	for _, r := range history {
		if r.Info == nil || r == deployed || r.Labels[HealthLabel] != HealthHealthy {
			continue
		}
		if s := r.Info.Status; s != releasecommon.StatusDeployed && s != releasecommon.StatusSuperseded {
			continue
		}
		if best == nil || r.Version > best.Version {
			best = r
		}
	}
	return best
}

// rejection is the newest revision made from digest when it was rolled back
// as unhealthy at this generation of the CR: the request is not tried
// again. A revision that records no generation (made by an older operator)
// matches any.
func rejection(history []*helmrelease.Release, digest string, generation int64) *helmrelease.Release {
	var newest *helmrelease.Release
	for _, r := range history {
		if r.Info != nil && r.Labels[DigestLabel] == digest && (newest == nil || r.Version > newest.Version) {
			newest = r
		}
	}
	if newest == nil || newest.Labels[HealthLabel] != HealthUnhealthy {
		return nil
	}
	if g, ok := newest.Labels[GenerationLabel]; ok && g != strconv.FormatInt(generation, 10) {
		return nil
	}
	return newest
}

// revisionLabels are the labels an install or upgrade puts on the revision
// it makes. An upgrade carries the previous revision's labels over unless
// one is "null" (Helm's way to drop it): the health of the previous
// revision is not the new one's.
func revisionLabels(req *Request, upgrade bool) map[string]string {
	l := map[string]string{DigestLabel: req.Digest()}
	if req.Generation > 0 {
		l[GenerationLabel] = strconv.FormatInt(req.Generation, 10)
	} else if upgrade {
		l[GenerationLabel] = "null"
	}
	if upgrade {
		l[HealthLabel] = "null"
	}
	return l
}

// relabel sets labels (and, when not empty, the description) of one
// revision in Helm's storage: one read of the whole record and one write.
func (c *Client) relabel(req *Request, version int, set map[string]string, description string) error {
	store := c.actionConfig(req.Namespace).Releases
	rel, err := c.record(req.Namespace, req.Name, version)
	if err != nil {
		return fmt.Errorf("reading revision %d of %s/%s: %w", version, req.Namespace, req.Name, err)
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	maps.Copy(rel.Labels, set)
	if description != "" && rel.Info != nil {
		rel.Info.Description = description
	}
	if err := store.Update(rel); err != nil {
		return fmt.Errorf("labelling revision %d of %s/%s: %w", version, req.Namespace, req.Name, err)
	}
	return nil
}
