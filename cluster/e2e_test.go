package cluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

var env *clustertest.Env

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, &env)) }

func clients(t *testing.T) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%10000)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(env.Tools.Binary("kubectl"), append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestKubectlCreateDeploymentBecomesAvailable(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, _ := clients(t)
	ns := namespace(t, cs)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=3")
	kubectl(t, "-n", ns, "wait", "--for=condition=Available", "deployment/web", "--timeout=90s")

	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !podReady(&p) {
			t.Errorf("pod %s: phase %s, ready %v", p.Name, p.Status.Phase, podReady(&p))
		}
		if p.Spec.NodeName != cluster.NodeName {
			t.Errorf("pod %s scheduled to %q, want %s", p.Name, p.Spec.NodeName, cluster.NodeName)
		}
		if ip := net.ParseIP(p.Status.PodIP); ip == nil || !ip.IsLoopback() {
			t.Errorf("pod %s IP %q is not a loopback address", p.Name, p.Status.PodIP)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestOLMCRDsServed(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, _ := clients(t)
	want := map[string][]string{
		"operators.coreos.com/v1alpha1": {"catalogsources", "clusterserviceversions", "installplans", "subscriptions"},
		"operators.coreos.com/v1":       {"operatorgroups", "olmconfigs", "operatorconditions", "operators"},
	}
	for gv, resources := range want {
		list, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range resources {
			if !served[r] {
				t.Errorf("%s %s is not served", gv, r)
			}
		}
	}
	for _, ns := range []string{cluster.OLMNamespace, cluster.OperatorsNamespace} {
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
}

func TestComponentsHealthy(t *testing.T) {
	clustertest.SkipIfShort(t)
	for _, s := range env.Cluster.Status(context.Background()) {
		if !s.Running || !s.Healthy {
			t.Errorf("%s: running %v, healthy %v: %s", s.Name, s.Running, s.Healthy, s.Error)
		}
		t.Logf("%-24s pid %-7d rss %4d MiB, peak %4d MiB", s.Name, s.PID, s.RSSBytes>>20, s.PeakRSSBytes>>20)
	}
	// OLM's own health endpoints, as a user would reach them.
	insecure := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, url := range []string{"https://127.0.0.1:8443/healthz", "http://127.0.0.1:8080/healthz"} {
		resp, err := insecure.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", url, resp.Status)
		}
	}
}

func TestOperatorGroupAndAddressCatalogSourceAccepted(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, dyn := clients(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	og := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
		"metadata": map[string]any{"name": "og"},
		"spec":     map[string]any{"targetNamespaces": []any{ns}},
	}}
	if _, err := dyn.Resource(cluster.OperatorGroupResource).Namespace(ns).Create(ctx, og, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on this address: the catalog operator must still take
	// the source up and report its connection state.
	catsrc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
		"metadata": map[string]any{"name": "local"},
		"spec":     map[string]any{"sourceType": "grpc", "address": "127.0.0.1:1", "displayName": "local"},
	}}
	if _, err := dyn.Resource(cluster.CatalogSourceResource).Namespace(ns).Create(ctx, catsrc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(cluster.OperatorGroupResource).Namespace(ns).Get(ctx, "og", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "namespaces")
		return len(got) == 1 && got[0] == ns, nil
	})
	if err != nil {
		t.Errorf("olm did not reconcile the OperatorGroup: %v", err)
	}
	var state string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(cluster.CatalogSourceResource).Namespace(ns).Get(ctx, "local", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		state, _, _ = unstructured.NestedString(u.Object, "status", "connectionState", "lastObservedState")
		return state != "", nil
	})
	if err != nil {
		t.Errorf("the catalog operator reported no connection state for the CatalogSource: %v", err)
	}
	t.Logf("CatalogSource to a closed port: lastObservedState %s", state)
}

func TestCheck(t *testing.T) {
	clustertest.SkipIfShort(t)
	results, err := env.Cluster.Check(context.Background(), testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 5 {
		t.Errorf("check ran %d steps", len(results))
	}
}

func TestUpAgainIsHarmless(t *testing.T) {
	clustertest.SkipIfShort(t)
	before := pids(t)
	began := time.Now()
	if err := env.Cluster.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("second up took %s", time.Since(began).Round(10*time.Millisecond))
	after := pids(t)
	for name, pid := range before {
		if after[name] != pid {
			t.Errorf("%s restarted: pid %d, then %d", name, pid, after[name])
		}
	}
}

func pids(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range env.Cluster.Status(context.Background()) {
		if !s.Running {
			t.Fatalf("%s not running", s.Name)
		}
		out[s.Name] = s.PID
	}
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A second cluster beside the shared one, without OLM (whose ports are fixed
// and taken by the shared cluster): it shares nothing but the binaries. Each
// fault must end Up at once with a clear error.
func TestUpFaults(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// setup prepares the state directory and returns the options to use.
		setup func(t *testing.T, dir string) cluster.Options
		// check asserts the error.
		check func(t *testing.T, err error)
	}{
		{
			name: "busy port",
			setup: func(t *testing.T, dir string) cluster.Options {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return cluster.Options{StateDir: dir, Ports: cluster.Ports{Etcd: l.Addr().(*net.TCPAddr).Port}}
			},
			check: func(t *testing.T, err error) {
				var inUse *cluster.PortInUseError
				if !errors.As(err, &inUse) || inUse.Component != cluster.Etcd {
					t.Fatalf("err = %v, want a PortInUseError for etcd", err)
				}
			},
		},
		{
			name: "component crashes at start",
			setup: func(t *testing.T, dir string) cluster.Options {
				// etcd cannot use a data directory that is a file.
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte("not a directory"), 0o644); err != nil {
					t.Fatal(err)
				}
				return cluster.Options{StateDir: dir}
			},
			check: func(t *testing.T, err error) {
				var se *cluster.StartError
				if !errors.As(err, &se) || se.Component != cluster.Etcd {
					t.Fatalf("err = %v, want a StartError for etcd", err)
				}
				if !strings.Contains(se.Reason, "exited during start") || se.LogTail == "" {
					t.Errorf("StartError without exit reason or log tail: %v", err)
				}
				if first, _, _ := strings.Cut(err.Error(), "\n"); !strings.Contains(first, "etcd exited during start") {
					t.Errorf("first line %q does not say what failed", first)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			opts := tt.setup(t, dir)
			opts.CacheDir = filepath.Dir(filepath.Dir(env.Tools.BinDir))
			opts.StartTimeout = 30 * time.Second
			opts.WithoutOLM = true
			c, err := cluster.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })
			began := time.Now()
			err = c.Up(context.Background())
			if err == nil {
				t.Fatal("Up succeeded")
			}
			if d := time.Since(began); d > 30*time.Second {
				t.Errorf("Up took %s to fail", d)
			}
			tt.check(t, err)
			for _, s := range c.Status(context.Background()) {
				if s.Running {
					t.Errorf("%s left running after the failed start", s.Name)
				}
			}
		})
	}
}

func TestDownWithNothingRunning(t *testing.T) {
	clustertest.SkipIfShort(t)
	c, err := cluster.New(cluster.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Down(context.Background(), cluster.DownOptions{}); !errors.Is(err, cluster.ErrNotRunning) {
		t.Fatalf("Down = %v, want ErrNotRunning", err)
	}
}

// The last test: Down stops every process of the shared cluster, leaves no
// orphan, and a second Down says nothing runs. TestMain's own Down then finds
// nothing to do.
func TestZDownStopsEverything(t *testing.T) {
	clustertest.SkipIfShort(t)
	before := pids(t)
	began := time.Now()
	if err := env.Cluster.Down(context.Background(), cluster.DownOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("down took %s", time.Since(began).Round(10*time.Millisecond))
	for name, pid := range before {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			if state, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(state), ") Z") {
				t.Errorf("%s (pid %d) still running", name, pid)
			}
		}
	}
	for _, s := range env.Cluster.Status(context.Background()) {
		if s.Running {
			t.Errorf("%s still running", s.Name)
		}
	}
	if err := env.Cluster.Down(context.Background(), cluster.DownOptions{}); !errors.Is(err, cluster.ErrNotRunning) {
		t.Errorf("second Down = %v, want ErrNotRunning", err)
	}
}
