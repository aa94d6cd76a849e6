package scorecard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/chartpilot/chartpilot/operator/autoscale"
)

// What chartpilot-autoscale asks of each sample: 2 to 3 replicas, then 4 at
// most for the upgrade.
const (
	autoscaleMin         = 2
	autoscaleMax         = 3
	autoscaleUpgradedMax = 4
)

// autoscaleTest (chartpilot-autoscale): each alm-example, once installed,
// asks for autoscaling (spec.autoscaling: 2 to 3 replicas); every
// Deployment and StatefulSet of its release is then targeted by an HPA of
// the release with those bounds (the operator's, or the chart's own driven
// by the CR's values), the cluster's HPA controller scales it to 2, and an
// upgrade of the release (maxReplicas 4) keeps the count the HPA set.
func autoscaleTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "autoscale", func(ctx context.Context, c *clusterRun) error {
		in, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
		if err != nil {
			return fmt.Errorf("installing: %w", err)
		}
		var errs []error
		for _, cr := range in.crs {
			errs = append(errs, c.checkAutoscale(ctx, cr))
		}
		return errors.Join(errs...)
	})
}

// checkAutoscale runs chartpilot-autoscale's steps on one CR.
func (c *clusterRun) checkAutoscale(ctx context.Context, cr *unstructured.Unstructured) error {
	id := cr.GetKind() + " " + cr.GetName()
	installed, _, err := c.releaseObjects(cr.GetName())
	if err != nil {
		return err
	}
	rev, err := c.askAutoscale(ctx, cr, autoscaleMax, installed)
	if err != nil {
		return err
	}
	_, objs, err := c.releaseObjects(cr.GetName())
	if err != nil {
		return err
	}
	workloads := scalable(objs)
	if len(workloads) == 0 {
		return fmt.Errorf("%s: its release has no Deployment or StatefulSet to scale", id)
	}
	for _, w := range workloads {
		if err := c.checkHPA(ctx, w, autoscaleMax); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		began := time.Now()
		if err := c.waitReplicas(ctx, w, autoscaleMin); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		c.res.logf("%s: the HPA scaled %s to %d replicas in %s", id, w, autoscaleMin, time.Since(began).Round(10*time.Millisecond))
	}

	// An upgrade of the release must leave the HPA's count alone.
	began := time.Now()
	if _, err := c.askAutoscale(ctx, cr, autoscaleUpgradedMax, rev); err != nil {
		return fmt.Errorf("upgrading: %w", err)
	}
	c.res.logf("%s: upgraded (maxReplicas %d) in %s", id, autoscaleUpgradedMax, time.Since(began).Round(10*time.Millisecond))
	for _, w := range workloads {
		if err := c.checkHPA(ctx, w, autoscaleUpgradedMax); err != nil {
			return fmt.Errorf("%s after the upgrade: %w", id, err)
		}
		n, err := c.replicas(ctx, w)
		if err != nil {
			return err
		}
		if n != autoscaleMin {
			return fmt.Errorf("%s: the upgrade set %s to %d replicas; the HPA had set %d", id, w, n, autoscaleMin)
		}
		c.res.logf("%s: %s keeps its %d replicas through the upgrade", id, w, n)
	}
	return nil
}

// askAutoscale sets the CR's spec.autoscaling (enabled, autoscaleMin to
// max) and waits until a revision newer than after is Deployed and Ready;
// it returns that revision.
func (c *clusterRun) askAutoscale(ctx context.Context, cr *unstructured.Unstructured, max, after int) (int, error) {
	ri, err := c.resource(cr.GroupVersionKind(), c.ns)
	if err != nil {
		return 0, err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{autoscale.Field: map[string]any{
		"enabled": true, "minReplicas": autoscaleMin, "maxReplicas": max,
	}}})
	if err != nil {
		return 0, err
	}
	cur, err := ri.Patch(ctx, cr.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("asking %s %s to autoscale: %w", cr.GetKind(), cr.GetName(), err)
	}
	if _, ok, _ := unstructured.NestedMap(cur.Object, "spec", autoscale.Field); !ok {
		return 0, fmt.Errorf("the CRD of %s prunes spec.%s: regenerate it with chartpilot generate", cr.GetKind(), autoscale.Field)
	}
	states, err := c.waitDeployed(ctx, []*unstructured.Unstructured{cr}, func(st crState) bool {
		return st.release != nil && st.release.Version > after
	})
	if err != nil {
		return 0, err
	}
	return states[cr.GetName()].release.Version, nil
}

// scalable are the objects of a release an HPA may scale.
func scalable(objs []objectRef) []objectRef {
	var out []objectRef
	for _, o := range objs {
		if autoscale.IsTarget(o.gvk.GroupKind()) {
			out = append(out, o)
		}
	}
	return out
}

// checkHPA finds the HPA of the test namespace that targets w and checks its
// bounds.
func (c *clusterRun) checkHPA(ctx context.Context, w objectRef, max int32) error {
	hpas, err := c.kube.AutoscalingV2().HorizontalPodAutoscalers(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing HPAs: %w", err)
	}
	var found *autoscalingv2.HorizontalPodAutoscaler
	for i, h := range hpas.Items {
		if ref := h.Spec.ScaleTargetRef; ref.Kind == w.gvk.Kind && ref.Name == w.name {
			found = &hpas.Items[i]
		}
	}
	if found == nil {
		return fmt.Errorf("no HorizontalPodAutoscaler targets %s", w)
	}
	if min := found.Spec.MinReplicas; min == nil || *min != autoscaleMin || found.Spec.MaxReplicas != max {
		return fmt.Errorf("HPA %s scales %s between %v and %d, not %d and %d as the CR asks", found.Name, w, ptrValue(found.Spec.MinReplicas), found.Spec.MaxReplicas, autoscaleMin, max)
	}
	return nil
}

func ptrValue(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// replicas is a workload's spec.replicas (1 when unset, as its controller reads it).
func (c *clusterRun) replicas(ctx context.Context, w objectRef) (int64, error) {
	ri, err := c.resource(w.gvk, c.ns)
	if err != nil {
		return 0, err
	}
	u, err := ri.Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", w, err)
	}
	n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !ok {
		n = 1
	}
	return n, nil
}

// waitReplicas waits until the HPA controller has set w's replicas to n.
func (c *clusterRun) waitReplicas(ctx context.Context, w objectRef, n int64) error {
	var got int64
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		var err error
		got, err = c.replicas(ctx, w)
		return err == nil && got == n, nil
	})
	if err != nil {
		return fmt.Errorf("%s has %d replicas after %s, not the HPA's minReplicas %d (does the cluster run kube-controller-manager's HPA controller?)", w, got, c.opts.WaitTime, n)
	}
	return nil
}
