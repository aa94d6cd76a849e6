package release

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How each apply method meets another field manager: an autoscaler that
// owns a Deployment's replicas (it writes them through the scale
// subresource), as an HPA does, while the chart sets them too.
// Client-side, Helm's three-way patch (from the live object to the chart's)
// sets the chart's replicas back, as Helm 3 did; server-side, the API server
// refuses the chart's replicas as a conflict with the autoscaler (Helm 4
// does not force conflicts) and the upgrade fails. And a
// release keeps the method it was installed with: an upgrade asking for
// server-side apply of a client-side release stays client-side. See
// docs/design/server-side-apply.md.
func TestApplyMethodsMeetAnotherManager(t *testing.T) {
	tests := []struct {
		name       string
		ssa        bool
		wantMethod string
		// wantConflict: the upgrade is refused as a conflict with the
		// autoscaler.
		wantConflict bool
	}{
		{name: "client-side", wantMethod: ""},
		{name: "server-side", ssa: true, wantMethod: "ssa", wantConflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			req := f.request(map[string]any{"withDeployment": true, "greeting": "one"})
			req.ServerSideApply = tt.ssa
			if _, err := f.reconcile(req); err != nil {
				t.Fatal(err)
			}
			if got := mustV1(t)(f.client.actionConfig(f.ns).Releases.Last("app")).ApplyMethod; got != tt.wantMethod && !(tt.wantMethod == "" && got == "csa") {
				t.Errorf("installed with apply method %q, want %q", got, tt.wantMethod)
			}
			deployments := f.cs.AppsV1().Deployments(f.ns)
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: f.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
			if _, err := deployments.UpdateScale(ctx, "app", scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil {
				t.Fatal(err)
			}

			next := f.request(map[string]any{"withDeployment": true, "greeting": "two"})
			next.ServerSideApply = !tt.ssa // the release keeps its method
			// Helm's apply alone: the runtime's drift repair would restore
			// the chart's replicas on its own (an HPA the chart renders is
			// what tells it to leave them, see package autoscale).
			next.LeaveDrift = true
			_, err := f.reconcile(next)
			if conflict := err != nil && strings.Contains(err.Error(), "conflict"); conflict != tt.wantConflict {
				t.Fatalf("upgrade: %v; want a conflict with the autoscaler: %v", err, tt.wantConflict)
			}
			if tt.wantConflict {
				return
			}
			d, err := deployments.Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 1 {
				t.Errorf("replicas %d after the upgrade, want the chart's 1 (Helm's three-way patch)", *d.Spec.Replicas)
			}
			last := mustV1(t)(f.client.actionConfig(f.ns).Releases.Last("app"))
			if last.Version != 2 || last.ApplyMethod != "csa" && last.ApplyMethod != "" {
				t.Errorf("revision %d applied with %q, want revision 2 still client-side", last.Version, last.ApplyMethod)
			}
		})
	}
}
