package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// An upgrade whose pods crash-loop is rolled back, before its deadline,
// to the revision recorded healthy: the CR's status says why, a Warning
// event and a metric count it, and the same spec is not tried again (pokes
// of the CR run no Helm action) until the spec changes.
func TestUnhealthyUpgradeRolledBack(t *testing.T) {
	clustertest.SkipIfShort(t)
	addr := freeAddress(t)
	startOperator(t, func(o *Options, _ *watches.Watch) { o.MetricsBindAddress = addr })
	e := newEnv(t)
	ns := e.namespace()
	const name = "canary"
	e.createApp(ns, name, map[string]any{"greeting": "one"}, nil)
	// A short deadline, so that revision 1 (a ConfigMap, healthy at once)
	// is recorded healthy within the test.
	e.patchApp(ns, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "2s"}}})
	e.waitEvents(ns, name, reconciler.EventInstalled, reconciler.EventHealthVerified)

	// The upgrade adds a Deployment whose pod crash-loops; its deadline is
	// long, so only the regression can trigger the rollback in time.
	e.patchApp(ns, name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "5m"}},
		"spec":     map[string]any{"greeting": "two", "withDeployment": true},
	})
	e.waitGreeting(ns, name, "two")
	began := time.Now()
	dep, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.pod(ns, name+"-crash", dep.Spec.Template.Labels, corev1.ContainerStatus{
		Name: "app", Image: "registry.k8s.io/pause:3.10", RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
	})
	u := e.waitCondition(ns, name, reconciler.TypeReleaseFailed, metav1.ConditionTrue, reconciler.ReasonUpgradeUnhealthy)
	t.Logf("rolled back %s after the pod crash-looped", time.Since(began).Round(100*time.Millisecond))
	if msg := condition(u, reconciler.TypeReleaseFailed).Message; !strings.Contains(msg, "CrashLoopBackOff") || !strings.Contains(msg, "revision 2") {
		t.Errorf("ReleaseFailed message %q, want revision 2 and CrashLoopBackOff", msg)
	}
	e.waitGreeting(ns, name, "one")
	if rev, _, _ := unstructured.NestedInt64(u.Object, "status", "deployedRelease", "version"); rev != 3 {
		t.Errorf("deployed revision %d, want 3 (revision 1 again)", rev)
	}
	e.waitEvents(ns, name, reconciler.EventUnhealthyRolledBack)
	labels := map[string]string{releasemetrics.LabelKind: "App", releasemetrics.LabelNamespace: ns, releasemetrics.LabelName: name}
	series := scrape(t, addr)
	for metric, want := range map[string]float64{releasemetrics.UnhealthyRollbacks: 1, releasemetrics.Failed: 1, releasemetrics.Revision: 3} {
		if v, ok := releasemetrics.Sample(series, metric, labels); !ok || v != want {
			t.Errorf("%s = %v (found %v), want %v", metric, v, ok, want)
		}
	}

	// Held back: reconciles of the same spec run no Helm action.
	actions := counterSum(t, "chartpilot_release_actions_total", nil)
	for i := range 3 {
		e.patchApp(ns, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"poke": string(rune('a' + i))}}})
	}
	time.Sleep(2 * time.Second)
	if got := counterSum(t, "chartpilot_release_actions_total", nil); got != actions {
		t.Errorf("the rolled back spec was tried again: %v more Helm actions", got-actions)
	}
	// A new spec is tried.
	e.patchApp(ns, name, map[string]any{"spec": map[string]any{"greeting": "three", "withDeployment": false}})
	e.waitGreeting(ns, name, "three")
	e.waitCondition(ns, name, reconciler.TypeReleaseFailed, metav1.ConditionFalse, "")
}
