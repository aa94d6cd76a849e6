package node_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/internal/podhealth"
)

// TestRealNode starts a cluster whose node runs real containers, and proves
// what kwok cannot: an image built here is pulled from the local registry
// and runs as its non-root user, a readiness probe reaches its process,
// kubectl logs works, Services and cluster DNS route (OLM's operators run
// in pods and reach the API through the kubernetes Service), a missing
// image is named, and down leaves nothing on the host.
func TestRealNode(t *testing.T) {
	clustertest.SkipIfShort(t)
	if err := cluster.RealNodePossible(); err != nil {
		t.Skipf("%v", err)
	}
	clustertest.LockRealNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out bytes.Buffer
	c, err := cluster.New(cluster.Options{StateDir: filepath.Join(t.TempDir(), "cluster"), Node: cluster.NodeReal, Out: &out, StartTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	upErr := c.Up(ctx)
	t.Logf("cluster up with a real node in %s:\n%s", time.Since(began).Round(time.Second), out.String())
	t.Cleanup(func() {
		out.Reset()
		if err := c.Down(context.Background(), cluster.DownOptions{Wipe: true}); err != nil {
			t.Errorf("down: %v\n%s", err, out.String())
		}
		assertNothingLeft(t, c.StateDir())
	})
	if upErr != nil {
		t.Fatalf("up: %v", upErr)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	t.Run("operand image runs, probed, as its user", func(t *testing.T) {
		ref := images.Repository(c.RegistryAddr(), images.HelloServer) + ":local"
		began := time.Now()
		dep := helloDeployment("hello", ref)
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, ctx, cs, dep)
		t.Logf("Deployment of the registry's image available in %s", time.Since(began).Round(100*time.Millisecond))
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("pods: %v", err)
		}
		pod := pods.Items[0]
		if pod.Status.PodIP == "" || !strings.HasPrefix(pod.Status.PodIP, "10.88.") {
			t.Errorf("pod IP %q, want one of the pod network %s", pod.Status.PodIP, node.PodCIDR)
		}
		logs, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil || !strings.Contains(string(logs), "serving") {
			t.Errorf("kubectl logs: %q, %v", logs, err)
		}
		if uid := containerUID(t, pod); uid != "65532" {
			t.Errorf("the container runs as uid %s, want the image's non-root 65532", uid)
		}
	})

	t.Run("OLM runs in pods", func(t *testing.T) {
		for _, name := range []string{"olm-operator", "catalog-operator"} {
			d, err := cs.AppsV1().Deployments(cluster.OLMNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Status.AvailableReplicas < 1 {
				t.Errorf("deployment %s: %v available, %v", name, d.Status.AvailableReplicas, err)
			}
		}
	})

	t.Run("a missing image is named", func(t *testing.T) {
		ref := images.Repository(c.RegistryAddr(), "no-such-image") + ":v1"
		dep := helloDeployment("missing", ref)
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var why string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			why = podhealth.Problems(ctx, cs, "default", dep.Spec.Selector)
			return strings.Contains(why, "cannot pull image "+ref), nil
		})
		if err != nil {
			t.Errorf("problems = %q, want the image named", why)
		}
	})
}

func helloDeployment(name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: image,
					Env:   []corev1.EnvVar{{Name: "GREETING", Value: "hello from a real pod"}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 1,
					},
					SecurityContext: &corev1.SecurityContext{
						RunAsNonRoot:             ptr.To(true),
						ReadOnlyRootFilesystem:   ptr.To(true),
						AllowPrivilegeEscalation: ptr.To(false),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				}}},
			},
		},
	}
}

func waitAvailable(t *testing.T, ctx context.Context, cs kubernetes.Interface, dep *appsv1.Deployment) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas >= 1, nil
	})
	if err != nil {
		t.Fatalf("deployment %s not available: %s", dep.Name, podhealth.Problems(ctx, cs, dep.Namespace, dep.Spec.Selector))
	}
}

// containerUID finds the pod's container process on the host (its
// environment holds the greeting) and reads its user.
func containerUID(t *testing.T, pod corev1.Pod) string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("GREETING=hello from a real pod")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == "Uid:" {
				return f[1]
			}
		}
	}
	t.Fatalf("no process of pod %s found on the host", pod.Name)
	return ""
}

// assertNothingLeft checks that down removed the node's traces: no
// container process, no mount under the state directory, no bridge.
func assertNothingLeft(t *testing.T, stateDir string) {
	t.Helper()
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), stateDir+"/") {
		t.Errorf("mounts under %s remain after down", stateDir)
	}
	if _, err := os.Stat("/sys/class/net/" + node.Bridge); err == nil {
		t.Errorf("bridge %s remains after down", node.Bridge)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte("GREETING=hello from a real pod")) {
			t.Errorf("container process %s remains after down", e.Name())
		}
	}
}
