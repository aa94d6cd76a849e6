package operator

import (
	"context"
	"k8s.io/utils/ptr"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
)

// The cache holds views of a release's objects (metadata and readiness),
// yet every kind of change behind Helm's back is still seen and undone: a
// ConfigMap's data (no generation), a Deployment's spec (a new generation),
// and a label the release set, whose loss takes the object out of the
// cache's selector.
func TestDriftThroughViews(t *testing.T) {
	clustertest.SkipIfShort(t)
	startOperator(t, nil)
	e := newEnv(t)
	ns := e.namespace()
	ctx := context.Background()
	e.createApp(ns, "viewed", map[string]any{"greeting": "hi", "withDeployment": true}, nil)
	e.waitCondition(ns, "viewed", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonInstallSuccessful)
	deployments := e.cs.AppsV1().Deployments(ns)

	tests := []struct {
		name string
		// tamper changes the release's objects.
		tamper func(t *testing.T)
		// restored says whether the change was undone.
		restored func() bool
	}{{
		name: "ConfigMap data",
		tamper: func(t *testing.T) {
			cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "viewed-config", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Data["greeting"] = "tampered"
			if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		restored: func() bool { got, err := e.greeting(ns, "viewed"); return err == nil && got == "hi" },
	}, {
		name: "Deployment spec",
		tamper: func(t *testing.T) {
			update(t, deployments, "viewed", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(int32(3)) })
		},
		restored: func() bool {
			d, err := deployments.Get(ctx, "viewed", metav1.GetOptions{})
			return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 1
		},
	}, {
		name: "a label the release set",
		tamper: func(t *testing.T) {
			update(t, deployments, "viewed", func(d *appsv1.Deployment) { delete(d.Labels, reconciler.ManagedLabel) })
		},
		restored: func() bool {
			d, err := deployments.Get(ctx, "viewed", metav1.GetOptions{})
			return err == nil && d.Labels[reconciler.ManagedLabel] == "true"
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tamper(t)
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
				return tt.restored(), nil
			})
			if err != nil {
				t.Fatalf("%s was not restored", tt.name)
			}
		})
	}
	// Metadata another controller keeps is not drift.
	update(t, deployments, "viewed", func(d *appsv1.Deployment) { d.Annotations["example.com/other"] = "kept" })
	time.Sleep(2 * time.Second)
	if d, err := deployments.Get(ctx, "viewed", metav1.GetOptions{}); err != nil || d.Annotations["example.com/other"] != "kept" {
		t.Errorf("an annotation the release does not set was removed: %v", err)
	}
}

// update changes a Deployment, retrying conflicts with the operator's writes.
func update(t *testing.T, deployments interface {
	Get(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error)
	Update(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
}, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		change(d)
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("updating Deployment %s: %v", name, err)
	}
}
