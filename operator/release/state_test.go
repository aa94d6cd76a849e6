package release

import (
	"testing"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// history makes revisions 1..n with the given statuses, each labelled with
// the digest "want" unless the status is prefixed by "old:".
func history(statuses ...string) []*helmrelease.Release {
	var out []*helmrelease.Release
	for i, s := range statuses {
		digest := "want"
		if len(s) > 4 && s[:4] == "old:" {
			digest, s = "old", s[4:]
		}
		out = append(out, &helmrelease.Release{
			Name: "app", Version: i + 1,
			Info:   &helmrelease.Info{Status: releasecommon.Status(s)},
			Labels: map[string]string{DigestLabel: digest},
		})
	}
	return out
}

// rolledBack is a history whose request ("want") was rolled back as
// unhealthy at generation 3: revision 2 is marked so, revision 3 is the
// last healthy one deployed again.
func rolledBack() []*helmrelease.Release {
	h := history("old:superseded", "superseded", "old:deployed")
	h[1].Labels[HealthLabel], h[1].Labels[GenerationLabel] = HealthUnhealthy, "3"
	return h
}

// Each hand-made history (and, for a deployed release, what differs in the
// cluster) is classified, and the step planned for it never uninstalls a
// release that was ever deployed. A settled state plans nothing.
func TestAssessAndPlan(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		name         string
		history      []*helmrelease.Release
		status       Status
		everDeployed bool
		lastGood     int // version, 0 for none
		action       string
		remediation  string
		// generation is the CR's (0 for 3); drift what the cluster shows.
		generation int64
		drift      []Drift
	}{
		{"no release", nil, Absent, false, 0, ActionInstall, ActionUninstall, 0, nil},
		{"uninstalled", history("uninstalled"), Absent, false, 0, ActionInstall, ActionUninstall, 0, nil},
		{"in sync", history("superseded", "deployed"), InSync, true, 2, "", "", 0, nil},
		{"values changed", history("old:deployed"), OutOfSync, true, 1, ActionUpgrade, ActionRollback, 0, nil},
		{"crash mid-install", history("pending-install"), Locked, false, 0, ActionUnlock, "", 0, nil},
		{"failed first install", history("failed"), Failed, false, 0, ActionUninstall, "", 0, nil},
		{"crash mid-upgrade before superseding", history("old:deployed", "pending-upgrade"), Locked, true, 1, ActionUnlock, "", 0, nil},
		{"crash mid-upgrade after superseding", history("old:superseded", "pending-upgrade"), Locked, true, 1, ActionUnlock, "", 0, nil},
		{"unlocked mid-upgrade crash", history("old:superseded", "failed"), Failed, true, 1, ActionUpgrade, ActionRollback, 0, nil},
		{"crash mid-rollback after superseding", history("old:superseded", "superseded", "failed", "pending-rollback"), Locked, true, 2, ActionUnlock, "", 0, nil},
		{"unlocked mid-rollback crash", history("old:superseded", "superseded", "failed", "failed"), Failed, true, 2, ActionUpgrade, ActionRollback, 0, nil},
		{"failed upgrade of a deployed release", history("old:deployed", "failed"), Failed, true, 1, ActionUpgrade, ActionRollback, 0, nil},
		{"superseded revisions pruned away", history("failed", "failed")[1:], Failed, true, 0, ActionUpgrade, ActionRollback, 0, nil},
		{"superseded on top, none deployed", history("superseded", "superseded"), Failed, true, 2, ActionUpgrade, ActionRollback, 0, nil},
		{"objects changed in the cluster: repaired", history("superseded", "deployed"), Drifted, true, 2, ActionRepair, "", 0,
			[]Drift{{Object: "ConfigMap ns/app", Path: ".data.message"}}},
		{"rolled back as unhealthy at this generation: kept, not retried", rolledBack(), Rejected, true, 3, "", "", 3, nil},
		{"rolled back as unhealthy, then the spec changed: upgraded", rolledBack(), OutOfSync, true, 3, ActionUpgrade, ActionRollback, 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := tc.generation
			if gen == 0 {
				gen = 3
			}
			st := assessRequest(tc.history, "want", gen)
			if len(tc.drift) > 0 {
				drifted(&st, tc.drift)
			}
			if st.Status != tc.status || st.EverDeployed != tc.everDeployed {
				t.Fatalf("assessed %s (ever deployed %v): %s; want %s (%v)", st.Status, st.EverDeployed, st.Reason, tc.status, tc.everDeployed)
			}
			if got := version(st.LastGood); got != tc.lastGood {
				t.Errorf("last good revision %d, want %d", got, tc.lastGood)
			}
			if st.Status.Settled() {
				if tc.action != "" {
					t.Errorf("settled as %s, want action %s", st.Status, tc.action)
				}
				return
			}
			step, err := c.plan(st)
			if err != nil {
				t.Fatal(err)
			}
			if got := step.action.Name(); got != tc.action {
				t.Errorf("action %s, want %s", got, tc.action)
			}
			if got := name(step.remediation); got != tc.remediation {
				t.Errorf("remediation %q, want %q", got, tc.remediation)
			}
			if st.EverDeployed && (step.action.Name() == ActionUninstall || name(step.remediation) == ActionUninstall) {
				t.Errorf("plans to uninstall a release that was deployed")
			}
		})
	}
}

func version(r *helmrelease.Release) int {
	if r == nil {
		return 0
	}
	return r.Version
}

func name(a Action) string {
	if a == nil {
		return ""
	}
	return a.Name()
}
