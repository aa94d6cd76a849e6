package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

var (
	restConfig *rest.Config
	// testEnv is the test API server; its KubeConfig reaches it, for
	// operator processes.
	testEnv = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("testdata", "crd.yaml")}}
)

var appGVR = schema.GroupVersionResource{Group: "charts.example.com", Version: "v1alpha1", Resource: "apps"}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	if os.Getenv(helperEnv) != "" {
		// The operator process of TestCrashMidInstall uses its parent's API
		// server; one of its own would outlive the SIGKILL that ends it.
		os.Exit(m.Run())
	}
	os.Exit(clustertest.MainAPIServer(m, testEnv, &restConfig))
}

// startOperator runs an operator for the App kind until the test ends.
func startOperator(t *testing.T, mutate func(*Options, *watches.Watch)) manager.Manager {
	t.Helper()
	clustertest.SkipIfShort(t)
	w := appWatch(t, "testdata/charts/app")
	opts := Options{Config: restConfig, MetricsBindAddress: "0", HealthProbeBindAddress: "0", MaxConcurrentReconciles: 4, Log: logr.Discard(), SkipNameValidation: true}
	if mutate != nil {
		mutate(&opts, &w)
	}
	opts.Watches = []watches.Watch{w}
	mgr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			// A runnable that outlives the grace period: say which, by
			// the stacks of what still runs.
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Errorf("operator: %v\ngoroutines:\n%s", err, stacks.String())
		}
	})
	return mgr
}

// appWatch is the App kind's watch with the chart at path.
func appWatch(t testing.TB, path string) watches.Watch {
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return watches.Watch{Group: "charts.example.com", Version: "v1alpha1", Kind: "App", Chart: path,
		LoadedChart: ch, LabelSelector: labels.Everything(), DryRunOption: watches.DryRunClient}
}

type env struct {
	t   *testing.T
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

func newEnv(t *testing.T) *env {
	clustertest.SkipIfShort(t)
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cs: cs, dyn: dyn}
}

func (e *env) namespace() string {
	ns := fmt.Sprintf("op%d", time.Now().UnixNano())
	if _, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return ns
}

func (e *env) createApp(ns, name string, spec map[string]any, lbls map[string]string) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "charts.example.com/v1alpha1", "kind": "App",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	u.SetLabels(lbls)
	if _, err := e.dyn.Resource(appGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// patchApp merge-patches the CR: an update would race the operator's status writes.
func (e *env) patchApp(ns, name string, patch map[string]any) {
	e.t.Helper()
	data, err := json.Marshal(patch)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(appGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitCondition waits for a condition of the CR to have status and reason.
func (e *env) waitCondition(ns, name, typ string, status metav1.ConditionStatus, reason string) *unstructured.Unstructured {
	e.t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := e.dyn.Resource(appGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u
		c := condition(u, typ)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), nil
	})
	if err != nil {
		e.t.Fatalf("%s/%s: condition %s=%s (%s) not reached; status %v", ns, name, typ, status, reason, last.Object["status"])
	}
	return last
}

func condition(u *unstructured.Unstructured, typ string) *metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		s, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(s)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		conds = append(conds, c)
	}
	return meta.FindStatusCondition(conds, typ)
}

func (e *env) greeting(ns, name string) (string, error) {
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name+"-config", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return cm.Data["greeting"], nil
}

func (e *env) waitGreeting(ns, name, want string) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got, err := e.greeting(ns, name)
		return err == nil && got == want, nil
	})
	if err != nil {
		got, gerr := e.greeting(ns, name)
		e.t.Fatalf("greeting of %s/%s: %q (%v), want %q", ns, name, got, gerr, want)
	}
}

// waitConfigMap waits until a ConfigMap's greeting is want, and returns
// when it saw it.
func (e *env) waitConfigMap(ns, name, want string) time.Time {
	e.t.Helper()
	var seen time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		seen = time.Now()
		return err == nil && cm.Data["greeting"] == want, nil
	})
	if err != nil {
		e.t.Fatalf("ConfigMap %s/%s never showed %q", ns, name, want)
	}
	return seen
}

// waitEvents waits until the object has an event with each reason.
func (e *env) waitEvents(ns, name string, reasons ...string) {
	e.t.Helper()
	seen := map[string]bool{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		for _, ev := range events.Items {
			seen[ev.Reason] = true
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("%s/%s: events %v, want each of %v", ns, name, slices.Sorted(maps.Keys(seen)), reasons)
	}
}

// One CR through its life: install, upgrade on a spec change, drift repair
// triggered by the dependent watch, invalid values, uninstall on deletion.
func TestLifecycle(t *testing.T) {
	clustertest.SkipIfShort(t)
	startOperator(t, nil)
	e := newEnv(t)
	ns := e.namespace()
	ctx := context.Background()

	e.createApp(ns, "web", map[string]any{"greeting": "hi"}, nil)
	u := e.waitCondition(ns, "web", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonInstallSuccessful)
	e.waitCondition(ns, "web", reconciler.TypeReady, metav1.ConditionTrue, "")
	e.waitGreeting(ns, "web", "hi")
	if v, _, _ := unstructured.NestedInt64(u.Object, "status", "deployedRelease", "version"); v != 1 {
		t.Errorf("deployedRelease.version %d", v)
	}
	if c, _, _ := unstructured.NestedString(u.Object, "status", "deployedRelease", "chart"); c != "app-0.1.0" {
		t.Errorf("deployedRelease.chart %q", c)
	}
	if got := u.GetFinalizers(); len(got) != 1 || got[0] != reconciler.Finalizer {
		t.Errorf("finalizers %v", got)
	}
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].UID != u.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %v", refs)
	}
	if cm.Labels[reconciler.ManagedLabel] != "true" {
		t.Errorf("labels %v", cm.Labels)
	}

	// Upgrade on a spec change.
	e.patchApp(ns, "web", map[string]any{"spec": map[string]any{"greeting": "bonjour"}})
	e.waitCondition(ns, "web", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonUpgradeSuccessful)
	e.waitGreeting(ns, "web", "bonjour")

	// Drift: a deleted ConfigMap comes back through the dependent watch.
	if err := e.cs.CoreV1().ConfigMaps(ns).Delete(ctx, "web-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGreeting(ns, "web", "bonjour")
	e.waitCondition(ns, "web", reconciler.TypeDrifted, metav1.ConditionFalse, reconciler.ReasonDriftRepaired)

	// Values that violate values.schema.json: Irreconcilable, release untouched.
	e.patchApp(ns, "web", map[string]any{"spec": map[string]any{"greeting": 5}})
	u = e.waitCondition(ns, "web", reconciler.TypeIrreconcilable, metav1.ConditionTrue, reconciler.ReasonInvalidValues)
	if msg := condition(u, reconciler.TypeIrreconcilable).Message; !containsAll(msg, "values.schema.json", "/greeting") {
		t.Errorf("Irreconcilable message %q does not name the field", msg)
	}
	if got, _ := e.greeting(ns, "web"); got != "bonjour" {
		t.Errorf("greeting %q after invalid values", got)
	}

	// Deletion uninstalls (envtest runs no garbage collector: only Helm deletes).
	if err := e.dyn.Resource(appGVR).Namespace(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.dyn.Resource(appGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("CR not deleted: finalizer kept")
	}
	if _, err := e.greeting(ns, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("release objects left after deletion: %v", err)
	}
}

// Only CRs in WATCH_NAMESPACE and matching the watch's selector are reconciled.
func TestNamespaceAndSelectorFiltering(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	watched, other := e.namespace(), e.namespace()
	startOperator(t, func(o *Options, w *watches.Watch) {
		o.Namespaces = []string{watched}
		w.LabelSelector = labels.SelectorFromSet(labels.Set{"tier": "gold"})
	})
	e.createApp(watched, "gold", map[string]any{"greeting": "a"}, map[string]string{"tier": "gold"})
	e.createApp(watched, "plain", map[string]any{"greeting": "b"}, nil)
	e.createApp(other, "gold", map[string]any{"greeting": "c"}, map[string]string{"tier": "gold"})
	e.waitCondition(watched, "gold", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	// Give the operator time it would need to (wrongly) act on the others:
	// one more CR in the watched namespace proves it is processing events.
	e.createApp(watched, "gold2", map[string]any{"greeting": "d"}, map[string]string{"tier": "gold"})
	e.waitCondition(watched, "gold2", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	for _, c := range []struct{ ns, name string }{{watched, "plain"}, {other, "gold"}} {
		if _, err := e.greeting(c.ns, c.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s/%s was reconciled: %v", c.ns, c.name, err)
		}
	}
}

// Operators of different shards split the CRs by their shard label; a CR
// relabelled moves to the other shard's operator.
func TestShards(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Shard = "one" })
	e.createApp(ns, "plain", map[string]any{"greeting": "a"}, nil)
	e.createApp(ns, "sharded", map[string]any{"greeting": "b"}, map[string]string{ShardLabel: "one"})
	e.createApp(ns, "elsewhere", map[string]any{"greeting": "c"}, map[string]string{ShardLabel: "two"})
	e.waitCondition(ns, "sharded", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	// A second CR of the shard proves the operator is processing events.
	e.createApp(ns, "sharded2", map[string]any{"greeting": "d"}, map[string]string{ShardLabel: "one"})
	e.waitCondition(ns, "sharded2", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	for _, name := range []string{"plain", "elsewhere"} {
		if _, err := e.greeting(ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("%s was reconciled by shard one: %v", name, err)
		}
	}

	startOperator(t, nil) // the operator of the CRs without a shard
	e.waitCondition(ns, "plain", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	patch := []byte(`{"metadata":{"labels":{"` + ShardLabel + `":"one"}}}`)
	if _, err := e.dyn.Resource(appGVR).Namespace(ns).Patch(context.Background(), "elsewhere", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(ns, "elsewhere", reconciler.TypeDeployed, metav1.ConditionTrue, "")
}

// Many CRs reconciled concurrently all reach Deployed.
func TestManyCRs(t *testing.T) {
	clustertest.SkipIfShort(t)
	startOperator(t, nil)
	e := newEnv(t)
	ns := e.namespace()
	const n = 100
	for i := range n {
		e.createApp(ns, fmt.Sprintf("app%d", i), map[string]any{"greeting": fmt.Sprint(i)}, nil)
	}
	for i := range n {
		e.waitCondition(ns, fmt.Sprintf("app%d", i), reconciler.TypeDeployed, metav1.ConditionTrue, "")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Run starts once discovery serves the watched kinds, and refuses to start,
// naming the kind and what discovery showed, when it never does.
func TestRunWaitsForServedKinds(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// mutate changes the App watch.
		mutate  func(*watches.Watch)
		wantErr string
	}{
		{name: "served"},
		{
			name:    "no CRD",
			mutate:  func(w *watches.Watch) { w.Group = "nowhere.example.com" },
			wantErr: "waiting for the watched kinds: kind App.nowhere.example.com/v1alpha1 not served after 1s (is its CRD installed and Established?): last seen: discovery (/api, /apis) does not list group-version nowhere.example.com/v1alpha1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := appWatch(t, "testdata/charts/app")
			if tt.mutate != nil {
				tt.mutate(&w)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Options{Watches: []watches.Watch{w}, Config: restConfig, ServedTimeout: time.Second,
					MetricsBindAddress: "0", HealthProbeBindAddress: "0", Log: logr.Discard(), SkipNameValidation: true})
			}()
			if tt.wantErr == "" {
				// Running after its wait: stop it.
				select {
				case err := <-done:
					t.Fatalf("Run ended: %v", err)
				case <-time.After(3 * time.Second):
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
				return
			}
			if err := <-done; err == nil || err.Error() != tt.wantErr {
				t.Errorf("Run:\n%v\nwant:\n%s", err, tt.wantErr)
			}
		})
	}
}
