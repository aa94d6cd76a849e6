package operator

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// The HPA is played by the test, through the scale subresource as the
// HorizontalPodAutoscaler controller writes it: envtest runs no
// kube-controller-manager (the scorecard's chartpilot-autoscale runs the
// real one on the local cluster).
func TestAutoscale(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name  string
		chart string
		// spec of the CR; autoscaling asks for 2 to 4 replicas.
		spec map[string]any
		// hpa is the HPA expected, by name; "" when none is.
		hpa string
		// kept: a replica count set through the scale subresource
		// survives upgrades and drift repair; otherwise the chart's
		// count is restored.
		kept bool
	}{
		{name: "the operator adds an HPA", chart: "testdata/charts/app",
			spec: map[string]any{"withDeployment": true, "replicas": 1, autoscale.Field: map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 4}},
			hpa:  "scaled", kept: true},
		{name: "the chart's own HPA, driven by the CR's values", chart: "testdata/charts/ownhpa",
			spec: map[string]any{"replicas": 1, autoscale.Field: map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 4}},
			hpa:  "scaled-hpa", kept: true},
		{name: "no autoscaling: the chart's replicas win", chart: "testdata/charts/app",
			spec: map[string]any{"withDeployment": true, "replicas": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			startOperator(t, func(_ *Options, w *watches.Watch) { *w = appWatch(t, tt.chart) })
			e := newEnv(t)
			ns := e.namespace()
			ctx := context.Background()
			e.createApp(ns, "scaled", tt.spec, nil)
			u := e.waitCondition(ns, "scaled", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonInstallSuccessful)

			hpas, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.hpa == "" {
				if len(hpas.Items) != 0 {
					t.Fatalf("HPAs %v, want none", hpas.Items)
				}
			} else {
				if len(hpas.Items) != 1 {
					t.Fatalf("%d HPAs, want %s alone", len(hpas.Items), tt.hpa)
				}
				checkHPA(t, &hpas.Items[0], tt.hpa, u)
			}

			// The HPA scales the Deployment; the operator hears of it
			// (a dependent object changed) and must not scale it back.
			before := reconciles(t)
			scaleTo(t, e, ns, "scaled", 3)
			want := int32(3)
			if !tt.kept {
				want = 1
				e.waitCondition(ns, "scaled", reconciler.TypeDrifted, metav1.ConditionFalse, reconciler.ReasonDriftRepaired)
			}
			waitReconciledSince(t, before)
			if got := replicas(t, e, ns, "scaled"); got != want {
				t.Errorf("after scaling to 3: %d replicas, want %d", got, want)
			}

			// An upgrade of the release.
			began := time.Now()
			// A patch: an update would race the operator's status writes.
			e.patchApp(ns, "scaled", map[string]any{"spec": map[string]any{"greeting": "bonjour"}})
			e.waitGreeting(ns, "scaled", "bonjour")
			e.waitCondition(ns, "scaled", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonUpgradeSuccessful)
			t.Logf("upgrade with the replica count %d, spec change to Deployed: %s", want, time.Since(began).Round(time.Millisecond))
			if got := replicas(t, e, ns, "scaled"); got != want {
				t.Errorf("after the upgrade: %d replicas, want %d", got, want)
			}
			if c := condition(e.waitCondition(ns, "scaled", reconciler.TypeDrifted, metav1.ConditionFalse, ""), reconciler.TypeDrifted); tt.kept && c.Reason != reconciler.ReasonNoDrift {
				t.Errorf("Drifted %s: %s; the HPA's count is not drift", c.Reason, c.Message)
			}
		})
	}
}

// Turning autoscaling off removes the operator's HPA and gives the chart its
// replica count back.
func TestAutoscaleOff(t *testing.T) {
	clustertest.SkipIfShort(t)
	startOperator(t, nil)
	e := newEnv(t)
	ns := e.namespace()
	ctx := context.Background()
	e.createApp(ns, "web", map[string]any{"withDeployment": true, "replicas": 2, autoscale.Field: map[string]any{"enabled": true, "maxReplicas": 4}}, nil)
	e.waitCondition(ns, "web", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonInstallSuccessful)
	if _, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	e.patchApp(ns, "web", map[string]any{"spec": map[string]any{autoscale.Field: map[string]any{"enabled": false}}})
	e.waitCondition(ns, "web", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonUpgradeSuccessful)
	if _, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("HPA after autoscaling was turned off: %v", err)
	}
	if got := replicas(t, e, ns, "web"); got != 2 {
		t.Errorf("%d replicas, want the chart's 2", got)
	}
}

// checkHPA checks an HPA of the release: its target, bounds and ties to the CR.
func checkHPA(t *testing.T, hpa *autoscalingv2.HorizontalPodAutoscaler, name string, cr *unstructured.Unstructured) {
	t.Helper()
	if hpa.Name != name {
		t.Errorf("HPA %s, want %s", hpa.Name, name)
	}
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != cr.GetName() || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA targets %+v", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 4 {
		t.Errorf("HPA bounds %v-%d, want 2-4", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if hpa.Labels[reconciler.ManagedLabel] != "true" {
		t.Errorf("HPA labels %v", hpa.Labels)
	}
	if refs := hpa.OwnerReferences; len(refs) != 1 || refs[0].UID != cr.GetUID() {
		t.Errorf("HPA owner references %v", refs)
	}
}

// scaleTo sets a Deployment's replicas as an HPA does.
func scaleTo(t *testing.T, e *env, ns, name string, n int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if _, err := e.cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func replicas(t *testing.T, e *env, ns, name string) int32 {
	t.Helper()
	d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// reconciles counts the App controller's reconciles so far.
func reconciles(t *testing.T) float64 {
	return counterSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "app.charts.example.com.v1alpha1"})
}

// waitReconciledSince waits until the App controller has reconciled more
// than before.
func waitReconciledSince(t *testing.T, before float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return reconciles(t) > before, nil
	})
	if err != nil {
		t.Fatal("no reconcile after the change")
	}
}

// markReady writes the status kube-controller-manager would give a
// Deployment once its pods are available (envtest runs none).
func markReady(t *testing.T, e *env, ns, name string) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: "True", Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: "True", Reason: "NewReplicaSetAvailable"},
			},
		}
		_, err = e.cs.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("marking Deployment %s/%s ready: %v", ns, name, err)
	}
}

// An autoscaling field that cannot be applied is Irreconcilable, naming the
// field, and installs nothing.
func TestAutoscaleInvalid(t *testing.T) {
	clustertest.SkipIfShort(t)
	startOperator(t, nil)
	e := newEnv(t)
	ns := e.namespace()
	e.createApp(ns, "bad", map[string]any{"withDeployment": true, autoscale.Field: map[string]any{"enabled": true, "minReplicas": 3, "maxReplicas": 2}}, nil)
	u := e.waitCondition(ns, "bad", reconciler.TypeIrreconcilable, metav1.ConditionTrue, reconciler.ReasonInvalidValues)
	if msg := condition(u, reconciler.TypeIrreconcilable).Message; !containsAll(msg, "spec.autoscaling.maxReplicas is 2", "minReplicas (3)") {
		t.Errorf("Irreconcilable message %q", msg)
	}
	if _, err := e.greeting(ns, "bad"); !apierrors.IsNotFound(err) {
		t.Errorf("installed despite invalid autoscaling: %v", err)
	}
}
