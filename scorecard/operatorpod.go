package scorecard

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/internal/podhealth"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// watchNamespaceEnv is how OLM tells an operator its namespaces.
const watchNamespaceEnv = "WATCH_NAMESPACE"

// startOperatorPods runs the operator as OLM would: the CSV's Deployments,
// from their image, in the test namespace, as their ServiceAccount,
// watching that namespace. It returns once they are available; stop
// deletes them and waits for their pods to go, after reading from their
// logs the requests the API server refused (the forbidden recorder sees
// only an operator in this process).
func (c *clusterRun) startOperatorPods(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, projectDir string) (*runningOperator, error) {
	ws, err := watches.Load(filepath.Join(projectDir, "watches.yaml"), watches.Options{})
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", projectDir, err)
	}
	deps := c.kube.AppsV1().Deployments(c.ns)
	var created []*appsv1.Deployment
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			for _, d := range created {
				c.readDenied(context.Background(), d)
			}
			stopErr = c.deleteDeployments(context.Background(), created)
			c.mu.Lock()
			c.running--
			c.mu.Unlock()
		})
		return stopErr
	}
	c.mu.Lock()
	c.running++
	c.mu.Unlock()
	c.onCleanup("the operator's Deployments", func(context.Context) error { return stop() })
	for _, spec := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		d := operatorDeployment(spec, c.ns, c.watched())
		if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating the operator's Deployment %s: %w", d.Name, err)
		}
		created = append(created, d)
	}
	for _, d := range created {
		err := c.poll(ctx, func(ctx context.Context) (bool, error) {
			cur, err := deps.Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cur.Status.ObservedGeneration >= cur.Generation && cur.Status.AvailableReplicas > 0 &&
				cur.Status.UpdatedReplicas == cur.Status.Replicas, nil
		})
		if err != nil {
			why := podhealth.Problems(context.Background(), c.kube, c.ns, d.Spec.Selector)
			return nil, fmt.Errorf("the operator's Deployment %s is not available within %s: %s", d.Name, c.opts.WaitTime, why)
		}
		c.res.logf("operator started from image %s as Deployment %s (ServiceAccount %s)", d.Spec.Template.Spec.Containers[0].Image, d.Name, d.Spec.Template.Spec.ServiceAccountName)
	}
	return &runningOperator{watches: ws, stop: stop}, nil
}

// operatorDeployment is the CSV's Deployment spec in namespace ns, told to
// watch the namespaces watched (OLM's downward-API value of
// WATCH_NAMESPACE reads an annotation only OLM sets).
func operatorDeployment(spec v1alpha1.StrategyDeploymentSpec, ns string, watched []string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: ns, Labels: spec.Label},
		Spec:       *spec.Spec.DeepCopy(),
	}
	pod := &d.Spec.Template.Spec
	for i := range pod.Containers {
		env := []corev1.EnvVar{{Name: watchNamespaceEnv, Value: strings.Join(watched, ",")}}
		for _, e := range pod.Containers[i].Env {
			if e.Name != watchNamespaceEnv {
				env = append(env, e)
			}
		}
		pod.Containers[i].Env = env
	}
	return d
}

// readDenied adds to the forbidden list what the API server refused the
// operator, as its pods' logs say it ("... is forbidden: User ...").
func (c *clusterRun) readDenied(ctx context.Context, d *appsv1.Deployment) {
	pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		c.res.logf("listing the operator's pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			data, err := c.kube.CoreV1().Pods(c.ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: ctr.Name}).DoRaw(ctx)
			if err != nil {
				c.res.logf("reading the logs of pod %s: %v", p.Name, err)
				continue
			}
			sc := bufio.NewScanner(strings.NewReader(string(data)))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if line := sc.Text(); strings.Contains(line, " is forbidden: ") {
					c.mu.Lock()
					c.podDenied = append(c.podDenied, line)
					c.mu.Unlock()
				}
			}
		}
	}
}

// deleteDeployments deletes ds with their pods and waits until they are
// gone: the next operator must not share the CRs with them.
func (c *clusterRun) deleteDeployments(ctx context.Context, ds []*appsv1.Deployment) error {
	fg := metav1.DeletePropagationForeground
	for _, d := range ds {
		err := c.kube.AppsV1().Deployments(c.ns).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the operator's Deployment %s: %w", d.Name, err)
		}
	}
	for _, d := range ds {
		sel := metav1.FormatLabelSelector(d.Spec.Selector)
		// The Deployment too: the next bundle's has the same name.
		err := c.poll(ctx, func(ctx context.Context) (bool, error) {
			pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil || len(pods.Items) > 0 {
				return false, err
			}
			_, err = c.kube.AppsV1().Deployments(c.ns).Get(ctx, d.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("the pods of the operator's Deployment %s did not go: %w", d.Name, err)
		}
	}
	return nil
}
