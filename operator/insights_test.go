package operator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/health"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// The health of a release's workloads reaches its CR: pods whose status
// says CrashLoopBackOff and ImagePullBackOff (written to the API server as
// the kubelet would) are named in status.health with the exit code and the
// image, an event says so, and the metrics endpoint counts them. The
// series of the CR go away with it.
func TestInsights(t *testing.T) {
	clustertest.SkipIfShort(t)
	addr := freeAddress(t)
	startOperator(t, func(o *Options, _ *watches.Watch) { o.MetricsBindAddress = addr })
	e := newEnv(t)
	ns := e.namespace()
	const name = "sick"
	e.createApp(ns, name, map[string]any{"greeting": "hi", "withDeployment": true, "replicas": 2}, nil)
	e.waitCondition(ns, name, reconciler.TypeDeployed, metav1.ConditionTrue, "")

	// The pod template carries the managed label, so the operator's cache
	// holds the pods.
	dep, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Labels[reconciler.ManagedLabel] != "true" {
		t.Fatalf("pod template labels %v lack %s", dep.Spec.Template.Labels, reconciler.ManagedLabel)
	}
	// No controller-manager runs here: the pods are created as the
	// ReplicaSet would, and their status written as the kubelet would.
	crash := e.pod(ns, name+"-crash", dep.Spec.Template.Labels, corev1.ContainerStatus{
		Name: "app", Image: "registry.k8s.io/pause:3.10", RestartCount: 5,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}},
	})
	pull := e.pod(ns, name+"-pull", dep.Spec.Template.Labels, corev1.ContainerStatus{
		Name: "app", Image: "registry.invalid/app:missing",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
	})
	want := []health.Problem{
		{Kind: "Pod", Namespace: ns, Name: crash, Reason: "CrashLoopBackOff", Message: "container app: last terminated with exit code 3 (Error)"},
		{Kind: "Pod", Namespace: ns, Name: pull, Reason: "ImagePullBackOff", Message: "container app: image registry.invalid/app:missing"},
	}
	// A release not ready is checked again every 15 s.
	var got *health.Summary
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := e.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = healthOf(u)
		return got != nil && got.Unhealthy == len(want) && fmt.Sprint(got.Problems) == fmt.Sprint(want), nil
	})
	if err != nil {
		t.Fatalf("status.health = %+v, want %+v", got, want)
	}
	e.waitEvents(ns, name, reconciler.ReasonObjectsUnhealthy, "Installed")

	series := scrape(t, addr)
	labels := map[string]string{releasemetrics.LabelKind: "App", releasemetrics.LabelNamespace: ns, releasemetrics.LabelName: name}
	for metric, want := range map[string]float64{
		releasemetrics.UnhealthyObjects: 2,
		releasemetrics.Revision:         1,
		releasemetrics.Ready:            0,
		releasemetrics.Failed:           0,
		releasemetrics.Drifted:          0,
		releasemetrics.DriftRepairs:     0,
	} {
		if v, ok := releasemetrics.Sample(series, metric, labels); !ok || v != want {
			t.Errorf("%s%v = %v (found %v), want %v", metric, labels, v, ok, want)
		}
	}
	if v, ok := releasemetrics.Sample(series, releasemetrics.HelmActions, with(labels, releasemetrics.LabelAction, "install", releasemetrics.LabelResult, releasemetrics.ResultSuccess)); !ok || v != 1 {
		t.Errorf("install actions = %v (found %v), want 1", v, ok)
	}
	if v, ok := releasemetrics.Sample(series, releasemetrics.Reconciles, with(labels, releasemetrics.LabelResult, releasemetrics.ResultSuccess)); !ok || v < 2 {
		t.Errorf("successful reconciles = %v (found %v), want at least 2", v, ok)
	}
	if v, ok := releasemetrics.Sample(series, releasemetrics.LastSuccessTimestamp, labels); !ok || time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("last success at %v (found %v), want within the minute", v, ok)
	}
	if _, ok := releasemetrics.Sample(series, releasemetrics.ReconcileDuration+"_count", labels); !ok {
		t.Errorf("no %s for the CR", releasemetrics.ReconcileDuration)
	}

	// The pods recover: the problems go, and an event says so.
	for _, pod := range []string{crash, pull} {
		if err := e.cs.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := e.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = healthOf(u)
		// Without pods, the Deployment itself is what is not ready.
		return got != nil && got.Unhealthy == 1 && got.Problems[0].Kind == "Deployment" && got.Problems[0].Reason == health.ReasonNotReady, nil
	})
	if err != nil {
		t.Fatalf("status.health = %+v, want the Deployment not ready", got)
	}

	if err := e.dyn.Resource(appGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !strings.Contains(scrapeText(t, addr), `name="`+name+`",namespace="`+ns+`"`), nil
	})
	if err != nil {
		t.Errorf("series of the deleted CR are still exported")
	}
}

// pod creates a pod with one container and writes cs as its status.
func (e *env) pod(ns, name string, labels map[string]string, cs corev1.ContainerStatus) string {
	e.t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: cs.Name, Image: cs.Image}}},
	}
	p, err := e.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}
	if _, err := e.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func healthOf(u *unstructured.Unstructured) *health.Summary {
	m, ok, _ := unstructured.NestedMap(u.Object, "status", "health")
	if !ok {
		return nil
	}
	s := &health.Summary{}
	n, _, _ := unstructured.NestedInt64(m, "unhealthy")
	s.Unhealthy = int(n)
	list, _, _ := unstructured.NestedSlice(m, "problems")
	for _, item := range list {
		p, _ := item.(map[string]any)
		str := func(k string) string { v, _ := p[k].(string); return v }
		s.Problems = append(s.Problems, health.Problem{Kind: str("kind"), Namespace: str("namespace"), Name: str("name"), Reason: str("reason"), Message: str("message")})
	}
	return s
}

// freeAddress is a loopback address with a port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func scrapeText(t *testing.T, addr string) string {
	t.Helper()
	var body []byte
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	return string(body)
}

// scrape reads the metrics endpoint in Prometheus's text format.
func scrape(t *testing.T, addr string) model.Vector {
	t.Helper()
	dec := expfmt.NewDecoder(strings.NewReader(scrapeText(t, addr)), expfmt.NewFormat(expfmt.TypeTextPlain))
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, decodeAll(t, dec)...)
	if err != nil {
		t.Fatal(err)
	}
	return samples
}

func decodeAll(t *testing.T, dec expfmt.Decoder) []*dto.MetricFamily {
	t.Helper()
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if err == io.EOF {
				return out
			}
			t.Fatal(err)
		}
		out = append(out, mf)
	}
}

func with(labels map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
