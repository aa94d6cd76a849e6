package release

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/health"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The gate's verdict on a revision deployed as requested, for each
// combination of its age, its health, its label and a revision to return to.
func TestGate(t *testing.T) {
	deployedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const deadline = time.Minute
	crash := health.Problem{Kind: "Pod", Name: "web-1", Reason: "CrashLoopBackOff"}
	pull := health.Problem{Kind: "Pod", Name: "web-1", Reason: "ImagePullBackOff"}
	for _, tc := range []struct {
		name string
		// age of the revision when observed.
		age time.Duration
		// label is the revision's HealthLabel, "" for none.
		label string
		// problems and notReady are what the comparison found.
		problems []health.Problem
		notReady []string
		// healthyBefore: a revision recorded healthy exists to return to.
		healthyBefore bool
		// gateOff sets no deadline.
		gateOff bool
		want    Status
		// reason is a part of the reason.
		reason string
	}{
		{name: "healthy, within the deadline", age: 10 * time.Second, healthyBefore: true, want: Watching, reason: "watched until 2026-01-01T12:01:00Z"},
		{name: "not ready, within the deadline", age: 10 * time.Second, notReady: []string{"Deployment web: InProgress"}, healthyBefore: true, want: Watching},
		{name: "image pull failing, within the deadline", age: 10 * time.Second, problems: []health.Problem{pull}, healthyBefore: true, want: Watching},
		{name: "crash loop within the deadline", age: 10 * time.Second, problems: []health.Problem{crash}, healthyBefore: true, want: Unhealthy, reason: "CrashLoopBackOff"},
		{name: "crash loop, nothing to return to", age: 10 * time.Second, problems: []health.Problem{crash}, want: Watching},
		{name: "healthy at the deadline", age: deadline, healthyBefore: true, want: Unverified},
		{name: "healthy at the deadline, first revision", age: 2 * deadline, want: Unverified},
		{name: "image pull failing at the deadline", age: deadline, problems: []health.Problem{pull}, healthyBefore: true, want: Unhealthy, reason: "ImagePullBackOff"},
		{name: "not ready at the deadline", age: deadline, notReady: []string{"Deployment web: InProgress"}, healthyBefore: true, want: Unhealthy, reason: "Deployment web"},
		{name: "not ready at the deadline, nothing to return to", age: deadline, notReady: []string{"Deployment web"}, want: InSync},
		{name: "recorded healthy, crash loop later", age: time.Hour, label: HealthHealthy, problems: []health.Problem{crash}, healthyBefore: true, want: InSync},
		{name: "recorded unhealthy, rollback interrupted", age: time.Hour, label: HealthUnhealthy, healthyBefore: true, want: Unhealthy},
		{name: "gate off", age: 10 * time.Second, problems: []health.Problem{crash}, healthyBefore: true, gateOff: true, want: InSync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev := &helmrelease.Release{Name: "app", Version: 2, Labels: map[string]string{},
				Info: &helmrelease.Info{Status: releasecommon.StatusDeployed, LastDeployed: deployedAt}}
			if tc.label != "" {
				rev.Labels[HealthLabel] = tc.label
			}
			st := State{Status: InSync, Deployed: rev, Problems: tc.problems, NotReady: tc.notReady}
			if tc.healthyBefore {
				st.LastHealthy = &helmrelease.Release{Version: 1}
			}
			d := deadline
			if tc.gateOff {
				d = 0
			}
			gate(&st, d, deployedAt.Add(tc.age))
			if st.Status != tc.want || !strings.Contains(st.Reason, tc.reason) {
				t.Errorf("got %s (%s), want %s with %q", st.Status, st.Reason, tc.want, tc.reason)
			}
		})
	}
}

// The revision an unhealthy upgrade returns to is the newest recorded
// healthy, not merely the previous one; a request rolled back is held back
// at the generation it was tried at only.
func TestLastHealthyAndRejection(t *testing.T) {
	h := history("old:superseded", "old:superseded", "superseded", "deployed")
	h[0].Labels[HealthLabel] = HealthHealthy
	h[2].Labels[HealthLabel] = HealthUnhealthy
	h[2].Labels[GenerationLabel] = "3"
	if got := version(lastHealthy(h, h[3])); got != 1 {
		t.Errorf("last healthy revision %d, want 1 (2 was never judged, 3 unhealthy)", got)
	}
	if got := version(lastHealthy(h, h[0])); got != 0 {
		t.Errorf("the deployed revision counts as its own last healthy one (%d)", got)
	}
	for _, tc := range []struct {
		name       string
		history    []*helmrelease.Release
		generation int64
		want       int
	}{
		{"the newest of the digest is not the unhealthy one", h, 3, 0},
		{"unhealthy at this generation", h[:3], 3, 3},
		{"unhealthy at another generation", h[:3], 4, 0},
		{"nothing of the digest", h[:2], 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := version(rejection(tc.history, "want", tc.generation)); got != tc.want {
				t.Errorf("rejected revision %d, want %d", got, tc.want)
			}
		})
	}
}

// An upgrade does not inherit the health of the revision before it.
func TestRevisionLabels(t *testing.T) {
	req := &Request{ChartDigest: "c", Generation: 7}
	up := revisionLabels(req, true)
	if up[HealthLabel] != "null" || up[GenerationLabel] != "7" || up[DigestLabel] != req.Digest() {
		t.Errorf("upgrade labels %v", up)
	}
	if _, ok := revisionLabels(req, false)[HealthLabel]; ok {
		t.Errorf("install labels set %s", HealthLabel)
	}
}

// clock is a test's time, moved by hand.
type clock struct{ now time.Time }

func (c *clock) get() time.Time { return c.now }

// gatedRequest is f.request with a health deadline and a CR generation.
func (f *fixture) gatedRequest(vals map[string]any, generation int64) *Request {
	req := f.request(vals)
	req.HealthDeadline, req.Generation = time.Minute, generation
	return req
}

// labels reads revision version's labels from Helm's storage.
func (f *fixture) labels(version int) map[string]string {
	f.t.Helper()
	rel, err := f.client.record(f.ns, "app", version)
	if err != nil {
		f.t.Fatal(err)
	}
	return rel.Labels
}

// failRollout marks the release's Deployment as past its progress
// deadline, as the deployment controller would.
func (f *fixture) failRollout() {
	f.t.Helper()
	ri := f.client.dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(f.ns)
	d, err := ri.Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cond := map[string]any{"type": "Progressing", "status": "False", "reason": health.ReasonProgressDeadlineExceeded,
		"message": `ReplicaSet "app-1" has timed out progressing.`, "lastUpdateTime": "2026-01-01T12:00:00Z", "lastTransitionTime": "2026-01-01T12:00:00Z"}
	if err := unstructured.SetNestedSlice(d.Object, []any{cond}, "status", "conditions"); err != nil {
		f.t.Fatal(err)
	}
	if err := unstructured.SetNestedField(d.Object, d.GetGeneration(), "status", "observedGeneration"); err != nil {
		f.t.Fatal(err)
	}
	if _, err := ri.UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// A healthy release is watched until its deadline, then recorded healthy:
// no action before, one label write after, nothing more.
func TestHealthyRevisionIsRecorded(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	clk := &clock{now: time.Now()}
	f.client.now = clk.get
	req := f.gatedRequest(map[string]any{"greeting": "hi"}, 1)
	res, err := f.reconcile(req)
	if err != nil || res.State.Status != Watching || !slices.Equal(actionNames(res), []string{ActionInstall}) {
		t.Fatalf("install: %s %v %v", res.State.Status, actionNames(res), err)
	}
	if res.State.VerifyAt.IsZero() || res.State.VerifyAt.Sub(clk.now) > time.Minute+5*time.Second {
		t.Errorf("verify at %s, want within the minute", res.State.VerifyAt)
	}
	if res, _ := f.reconcile(req); res.Changed() || res.State.Status != Watching {
		t.Errorf("within the deadline: %s %v", res.State.Status, actionNames(res))
	}
	clk.now = time.Now().Add(time.Minute)
	res, err = f.reconcile(req)
	if err != nil || res.State.Status != InSync || !slices.Equal(actionNames(res), []string{ActionVerify}) {
		t.Fatalf("at the deadline: %s %v %v", res.State.Status, actionNames(res), err)
	}
	if got := f.labels(1)[HealthLabel]; got != HealthHealthy {
		t.Errorf("revision 1 %s=%q, want %s", HealthLabel, got, HealthHealthy)
	}
	f.mustReconcile(req)
}

// An upgrade whose rollout fails is rolled back within its deadline to the
// last revision recorded healthy (not the previous one, which was never
// judged), and the same chart and values are not tried again until the
// CR's generation changes.
func TestUnhealthyUpgradeRollsBackToLastHealthy(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	clk := &clock{now: time.Now()}
	f.client.now = clk.get
	f.reconcile(f.gatedRequest(map[string]any{"greeting": "one"}, 1))
	clk.now = time.Now().Add(time.Minute)
	f.mustReconcile(f.gatedRequest(map[string]any{"greeting": "one"}, 1), ActionVerify)
	// Revision 2 is deployed but never judged: a newer request replaces it
	// within its deadline.
	clk.now = time.Now()
	if _, err := f.reconcile(f.gatedRequest(map[string]any{"greeting": "two"}, 2)); err != nil {
		t.Fatal(err)
	}

	bad := f.gatedRequest(map[string]any{"greeting": "three", "withDeployment": true}, 3)
	res, err := f.reconcile(bad)
	if err != nil || res.State.Status != Watching {
		t.Fatalf("upgrade: %s (%s) %v", res.State.Status, res.State.Reason, err)
	}
	f.failRollout()
	res, err = f.reconcile(bad)
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if got := actionNames(res); !slices.Equal(got, []string{ActionRollback}) {
		t.Fatalf("actions %v, want a rollback", got)
	}
	if cause := res.Actions[0].Cause; !errors.Is(cause, ErrUnhealthy) || !strings.Contains(cause.Error(), health.ReasonProgressDeadlineExceeded) {
		t.Errorf("rollback cause %v, want ErrUnhealthy naming the progress deadline", cause)
	}
	if res.State.Status != Rejected || !strings.Contains(res.State.Reason, "revision 3") {
		t.Errorf("after the rollback: %s (%s), want Rejected naming revision 3", res.State.Status, res.State.Reason)
	}
	if f.greeting() != "one" || res.State.Deployed.Version != 4 {
		t.Errorf("greeting %q at revision %d, want revision 1's (as revision 4)", f.greeting(), res.State.Deployed.Version)
	}
	if got := f.labels(3)[HealthLabel]; got != HealthUnhealthy {
		t.Errorf("revision 3 %s=%q", HealthLabel, got)
	}
	if got := f.labels(4)[HealthLabel]; got != HealthHealthy {
		t.Errorf("revision 4 (rollback to 1) %s=%q, want it to keep revision 1's", HealthLabel, got)
	}

	// Held back: no action, whatever the clock, across a new Client (a
	// restarted operator).
	clk.now = clk.now.Add(time.Hour)
	restarted, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	restarted.now = clk.get
	res, err = restarted.Reconcile(context.Background(), bad)
	if err != nil || res.Changed() || res.State.Status != Rejected {
		t.Errorf("retry: %s %v %v, want Rejected with no action", res.State.Status, actionNames(res), err)
	}
	// A new generation of the CR with the same values is tried again.
	clk.now = time.Now()
	again := f.gatedRequest(map[string]any{"greeting": "three", "withDeployment": true}, 4)
	res, err = f.reconcile(again)
	if err != nil || res.State.Status != Watching || !slices.Equal(actionNames(res), []string{ActionUpgrade}) {
		t.Errorf("new generation: %s %v %v, want an upgrade", res.State.Status, actionNames(res), err)
	}
}

// An upgrade whose objects are not ready by the deadline (an image that is
// never pulled looks so) is rolled back at the deadline, not before.
func TestNotReadyAtDeadlineRollsBack(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	clk := &clock{now: time.Now()}
	f.client.now = clk.get
	f.reconcile(f.gatedRequest(map[string]any{"greeting": "one"}, 1))
	clk.now = time.Now().Add(time.Minute)
	f.mustReconcile(f.gatedRequest(map[string]any{"greeting": "one"}, 1), ActionVerify)

	bad := f.gatedRequest(map[string]any{"greeting": "two", "withDeployment": true}, 2)
	clk.now = time.Now()
	if res, err := f.reconcile(bad); err != nil || res.State.Status != Watching {
		t.Fatalf("upgrade: %s %v", res.State.Status, err)
	}
	clk.now = clk.now.Add(59 * time.Second)
	if res, _ := f.reconcile(bad); res.Changed() || res.State.Status != Watching {
		t.Errorf("before the deadline: %s %v", res.State.Status, actionNames(res))
	}
	clk.now = clk.now.Add(2 * time.Second)
	res, err := f.reconcile(bad)
	if err != nil || !slices.Equal(actionNames(res), []string{ActionRollback}) || res.State.Status != Rejected {
		t.Fatalf("at the deadline: %s %v %v", res.State.Status, actionNames(res), err)
	}
	if !strings.Contains(res.Actions[0].Cause.Error(), "not healthy") {
		t.Errorf("cause %v", res.Actions[0].Cause)
	}
	if f.greeting() != "one" {
		t.Errorf("greeting %q", f.greeting())
	}
}

// The gate's states plan their one action; the settled ones plan none.
func TestPlanHealthGate(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		status    Status
		action    string
		unhealthy bool
	}{
		{Unverified, ActionVerify, false},
		{Unhealthy, ActionRollback, true},
	} {
		step, err := c.plan(State{Status: tc.status, Reason: "why"})
		if err != nil {
			t.Fatal(err)
		}
		if step.action.Name() != tc.action || step.remediation != nil || errors.Is(step.cause, ErrUnhealthy) != tc.unhealthy {
			t.Errorf("%s: step %s (remediation %v, cause %v)", tc.status, step.action.Name(), step.remediation, step.cause)
		}
	}
	for _, s := range []Status{InSync, Watching, Rejected} {
		if !s.Settled() {
			t.Errorf("%s is not settled", s)
		}
	}
	for _, s := range []Status{Unverified, Unhealthy, OutOfSync, Drifted} {
		if s.Settled() {
			t.Errorf("%s is settled", s)
		}
	}
}
