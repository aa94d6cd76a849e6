package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// OLM's resources that a healthy cluster serves.
var (
	OperatorGroupResource = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1", Resource: "operatorgroups"}
	CatalogSourceResource = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "catalogsources"}
	SubscriptionResource  = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}
	CSVResource           = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
	InstallPlanResource   = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "installplans"}
)

// CheckResult is one step of Check.
type CheckResult struct {
	Name     string
	Duration time.Duration
	Err      error
}

// Check proves the cluster does what chartpilot needs of it: a Deployment
// becomes Available with Ready pods on the kwok node, OLM's APIs are served,
// and an OperatorGroup and an address-based CatalogSource are accepted (OLM
// v0); catalogd's webhook labels a ClusterCatalog, catalogd and
// operator-controller report on a ClusterCatalog and a ClusterExtension
// (OLM v1). It
// works in a namespace of its own, deleted at the end, and stops at the first
// failing step.
func (c *Cluster) Check(ctx context.Context, out io.Writer) ([]CheckResult, error) {
	cs, dyn, err := c.clients()
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("chartpilot-check-%d", time.Now().UnixNano()%1_000_000)
	defer func() {
		// Deleting with a fresh context: the check's may be what failed.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(dctx, ns, metav1.DeleteOptions{})
	}()

	steps := []checkStep{
		{"node " + NodeName + " Ready", func(ctx context.Context) error {
			n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(n) {
				return fmt.Errorf("node %s is not Ready", NodeName)
			}
			return nil
		}},
		{"namespace " + ns + " with its default ServiceAccount", func(ctx context.Context) error {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			return poll(ctx, func(ctx context.Context) (bool, error) {
				_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
				return err == nil, nil
			})
		}},
		{"deployment Available with Ready pods", func(ctx context.Context) error {
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, checkDeployment(), metav1.CreateOptions{}); err != nil {
				return err
			}
			return WaitDeploymentAvailable(ctx, cs, ns, "check")
		}},
	}
	v0, v1 := c.olmVersions()
	if v0 {
		steps = append(steps, olmV0Steps(dyn, ns)...)
	}
	if v1 {
		steps = append(steps, checkStep{"OLM v1: webhook and reconcilers answer", func(ctx context.Context) error {
			return checkOLMv1(ctx, dyn, ns)
		}})
	}
	return c.runChecks(ctx, out, steps)
}

// checkStep is one step of Check.
type checkStep struct {
	name string
	run  func(ctx context.Context) error
}

// olmV0Steps prove OLM v0 serves its APIs and reconciles.
func olmV0Steps(dyn dynamic.Interface, ns string) []checkStep {
	return []checkStep{
		{"OLM APIs served", func(ctx context.Context) error {
			for _, gvr := range []schema.GroupVersionResource{OperatorGroupResource, CatalogSourceResource, SubscriptionResource, CSVResource, InstallPlanResource} {
				if _, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
					return fmt.Errorf("listing %s: %w", gvr.Resource, err)
				}
			}
			return nil
		}},
		{"OperatorGroup and address CatalogSource accepted", func(ctx context.Context) error {
			og := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
				"metadata": map[string]any{"name": "check"},
				"spec":     map[string]any{"targetNamespaces": []any{ns}},
			}}
			if _, err := dyn.Resource(OperatorGroupResource).Namespace(ns).Create(ctx, og, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating OperatorGroup: %w", err)
			}
			catsrc := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
				"metadata": map[string]any{"name": "check"},
				"spec":     map[string]any{"sourceType": "grpc", "address": "127.0.0.1:50051", "displayName": "check"},
			}}
			if _, err := dyn.Resource(CatalogSourceResource).Namespace(ns).Create(ctx, catsrc, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating CatalogSource: %w", err)
			}
			// OLM's olm operator answers an OperatorGroup with its status: proof that it reconciles.
			return poll(ctx, func(ctx context.Context) (bool, error) {
				u, err := dyn.Resource(OperatorGroupResource).Namespace(ns).Get(ctx, "check", metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "namespaces")
				return len(got) > 0, nil
			})
		}},
	}
}

// runChecks runs the steps, stopping at the first that fails.
func (c *Cluster) runChecks(ctx context.Context, out io.Writer, steps []checkStep) ([]CheckResult, error) {
	var results []CheckResult
	for _, s := range steps {
		began := time.Now()
		sctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
		err := s.run(sctx)
		cancel()
		r := CheckResult{Name: s.name, Duration: time.Since(began), Err: err}
		results = append(results, r)
		if err != nil {
			fmt.Fprintf(out, "  FAIL %-52s %s: %v\n", s.name, r.Duration.Round(10*time.Millisecond), err)
			return results, fmt.Errorf("cluster check %q failed: %w", s.name, err)
		}
		fmt.Fprintf(out, "  ok   %-52s %s\n", s.name, r.Duration.Round(10*time.Millisecond))
	}
	return results, nil
}

func checkDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "check"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "check"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// kwok runs no container: the image is never pulled.
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// WaitDeploymentAvailable waits until the deployment is Available with all its
// replicas ready and updated.
func WaitDeploymentAvailable(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	var last string
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		last = fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, want)
		if d.Status.ObservedGeneration < d.Generation || d.Status.ReadyReplicas != want || d.Status.UpdatedReplicas != want {
			return false, nil
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s/%s not available (%s): %w", ns, name, last, err)
	}
	return nil
}

func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
}
