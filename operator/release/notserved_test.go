package release

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// An install or upgrade whose values turn on an API the cluster does not
// serve fails with ErrAPINotServed and a message naming the object, its API
// and what the cluster serves instead, not Helm's "ensure CRDs are
// installed first"; nothing is changed.
func TestAPINotServed(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// installed first, when not nil: the release then upgrades.
		installed map[string]any
		vals      map[string]any
		dryRun    watches.DryRun
		sentinel  error
		want      []string
	}{{
		name:     "install: an API Kubernetes removed",
		vals:     map[string]any{"legacyPDB": true},
		sentinel: ErrInstallFailed,
		want:     []string{"the chart renders policy/v1beta1 PodDisruptionBudget app-legacy", "serves PodDisruptionBudget only as policy/v1", "an API Kubernetes removed"},
	}, {
		name:     "install with a server dry run",
		vals:     map[string]any{"legacyPDB": true},
		dryRun:   watches.DryRunServer,
		sentinel: ErrInstallFailed,
		want:     []string{"policy/v1beta1 PodDisruptionBudget app-legacy", "only as policy/v1"},
	}, {
		name:     "install: a custom resource without its CRD",
		vals:     map[string]any{"widget": true},
		sentinel: ErrInstallFailed,
		want:     []string{"the chart renders example.com/v1 Widget app-widget, which this cluster does not serve", "install the CRD"},
	}, {
		name:      "upgrade: values that turn on a removed API",
		installed: map[string]any{"greeting": "hi"},
		vals:      map[string]any{"greeting": "hi", "legacyPDB": true},
		sentinel:  ErrUpgradeFailed,
		want:      []string{"policy/v1beta1 PodDisruptionBudget app-legacy", "only as policy/v1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.installed != nil {
				f.mustReconcile(f.request(tt.installed), ActionInstall)
			}
			req := f.request(tt.vals)
			req.DryRun = tt.dryRun
			_, err := f.reconcile(req)
			if !errors.Is(err, ErrAPINotServed) || !errors.Is(err, tt.sentinel) || !errors.Is(err, ErrNothingChanged) {
				t.Fatalf("err = %v, want %v, ErrAPINotServed and ErrNothingChanged", err, tt.sentinel)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "ensure CRDs are installed first") {
				t.Errorf("error %q keeps Helm's misleading hint", err)
			}
			st, err := f.client.Observe(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.installed == nil && st.Latest != nil {
				t.Errorf("a release was left behind: revision %d", st.Latest.Version)
			}
			if tt.installed != nil && (st.Latest == nil || st.Latest.Version != 1) {
				t.Errorf("the failed upgrade changed the release: %+v", st.Latest)
			}
		})
	}
}

// Errors that are not about an unserved API pass through unchanged.
func TestExplainNotServedLeavesOtherErrors(t *testing.T) {
	c := &Client{}
	for _, err := range []error{errors.New("boom"), context.DeadlineExceeded} {
		if got := c.explainNotServed(err); got != err {
			t.Errorf("explainNotServed(%v) = %v", err, got)
		}
	}
}
