package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
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

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/logtest"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

var (
	local *cluster.Cluster
	cfg   *rest.Config
	gvr   = schema.GroupVersionResource{Group: "e2e.example.com", Version: "v1", Resource: "webs"}
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	flag.Parse()
	if benchmarksOnly() {
		// Each measure starts a cluster of its own: the tests' shared
		// cluster and operator would only add load to what they measure.
		os.Exit(m.Run())
	}
	var env *clustertest.Env
	os.Exit(clustertest.MainWith(m, &env, clustertest.Options{WithoutOLM: true, Setup: setup}))
}

// benchmarksOnly says no test runs: -run '^$', as the benchmarks are run.
func benchmarksOnly() bool {
	run := flag.Lookup("test.run")
	return run != nil && run.Value.String() == "^$"
}

// setup installs the CRD and starts the operator the tests share.
func setup(e *clustertest.Env) (stop func(), err error) {
	local, cfg = e.Cluster, e.Config
	if err := installCRD(cfg); err != nil {
		return nil, err
	}
	return startOperator()
}

func installCRD(cfg *rest.Config) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webs.e2e.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "e2e.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Web", ListKind: "WebList", Plural: "webs", Singular: "web"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	return crdready.Wait(context.Background(), cfg, []string{crd.Name}, crdready.Options{Timeout: 30 * time.Second})
}

// The operator of the package's tests, run as `run --leader-elect` runs
// it; exited is closed if it ends before the tests do, with its error in
// exitErr.
var (
	exited  = make(chan struct{})
	exitErr error
	// stepDowns counts the operator's terms ended by a Lease not renewed.
	stepDowns atomic.Int32
	// outageStarts and outageEnds count the operator's lines saying the
	// API server went away and came back.
	outageStarts, outageEnds atomic.Int32
	// opLog keeps the operator's lines, the per-CR failures (V(1)) too,
	// for a fault test that fails to show how the operator met the fault.
	opLog logtest.Lines
)

// startOperator runs one operator for the package's tests.
func startOperator() (stop func(), err error) {
	ch, err := loader.Load(filepath.Join("testdata", "chart"))
	if err != nil {
		return nil, err
	}
	opts := operator.Options{
		Watches: []watches.Watch{{Group: "e2e.example.com", Version: "v1", Kind: "Web", Chart: "bench",
			LoadedChart: ch, LabelSelector: labels.Everything(), DryRunOption: watches.DryRunClient}},
		Config: cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		Log: funcr.New(func(prefix, args string) {
			opLog.Write(prefix, args)
			if strings.Contains(args, "stepped down as leader") {
				stepDowns.Add(1)
			}
			if strings.Contains(args, reconciler.OutageStartMessage) {
				outageStarts.Add(1)
			}
			if strings.Contains(args, reconciler.OutageEndMessage) {
				outageEnds.Add(1)
			}
		}, funcr.Options{Verbosity: 1}),
		LeaderElection: true, LeaderElectionNamespace: "default", LeaderElectionID: "e2e",
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		exitErr = operator.Run(ctx, opts)
		close(exited)
	}()
	return func() {
		cancel()
		<-exited
		if exitErr != nil {
			fmt.Fprintln(os.Stderr, "operator:", exitErr)
		}
	}, nil
}

// running fails the test if the operator has exited.
func running(t *testing.T) {
	t.Helper()
	select {
	case <-exited:
		t.Fatalf("the operator exited: %v", exitErr)
	default:
	}
}

func clients(t *testing.T) (kubernetes.Interface, dynamic.Interface) {
	clustertest.SkipIfShort(t)
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

func waitCondition(t *testing.T, dyn dynamic.Interface, ns, name, typ string, timeout time.Duration) {
	t.Helper()
	var last any
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u.Object["status"]
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == typ && m["status"] == "True" && m["observedGeneration"] == u.GetGeneration() {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %s not True: %v", ns, name, typ, last)
	}
}

func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	ns := fmt.Sprintf("e2e-%d", time.Now().UnixNano()%1_000_000)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func createWeb(t *testing.T, dyn dynamic.Interface, ns, name string, spec map[string]any) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "Web",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Ready follows the Deployment: pods become ready on the kwok node.
func TestReadyFollowsTheDeployment(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, dyn := clients(t)
	ns := newNamespace(t, cs)
	createWeb(t, dyn, ns, "site", map[string]any{"replicas": 2})
	waitCondition(t, dyn, ns, "site", reconciler.TypeDeployed, 60*time.Second)
	waitCondition(t, dyn, ns, "site", reconciler.TypeReady, 90*time.Second)
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ReadyReplicas != 2 {
		t.Errorf("ready replicas %d", d.Status.ReadyReplicas)
	}
}

// The API server goes away for 60 s, mid-reconcile, and comes back: the
// operator, the leader of its Lease, steps down when it cannot renew it
// but does not exit; it stands again as the same candidate, takes its
// Lease back at once and applies a change made after the return within
// resumeWithin.
func TestAPIServerOutage(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, dyn := clients(t)
	ns := newNamespace(t, cs)
	createWeb(t, dyn, ns, "outage", map[string]any{"message": "before"})
	waitCondition(t, dyn, ns, "outage", reconciler.TypeDeployed, 60*time.Second)
	// Counted from here: an earlier test's step-down must not pass this one.
	starts, ends, downs := outageStarts.Load(), outageEnds.Load(), stepDowns.Load()

	// Change the CR, kill the API server while the upgrade runs, keep it
	// down 60 s, then start it again.
	during := []byte(`{"spec":{"message":"during"}}`)
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "outage", types.MergePatchType, during, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := process.Stop(filepath.Join(local.StateDir(), "run", cluster.APIServer+".pid"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Second)
	running(t)
	if stepDowns.Load() == downs {
		t.Error("the operator did not step down while it could not renew its Lease")
	}
	if err := local.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The informers wait for the server's return rather than back off past
	// it: the change is applied within seconds, not client-go's 30-60 s.
	changeApplied(t, cs, dyn, ns, "outage", stopped)
	// The term that saw the outage begin ended with it: the next says it
	// is over (when the upgrade was under way at the stop, it began).
	if s, e := outageStarts.Load()-starts, outageEnds.Load()-ends; s > 1 || e != s {
		t.Errorf("the outage was logged as starting %d and ending %d times, want as often, at most once", s, e)
	}
	running(t)
}

// etcd restarts under a running API server: the operator keeps running and
// applies a change made once the API server writes to etcd again within
// moments.
func TestEtcdRestart(t *testing.T) {
	cs, dyn := clients(t)
	ns := newNamespace(t, cs)
	createWeb(t, dyn, ns, "etcd", map[string]any{"message": "before"})
	waitCondition(t, dyn, ns, "etcd", reconciler.TypeDeployed, 60*time.Second)

	stopped := time.Now()
	if err := process.Stop(filepath.Join(local.StateDir(), "run", cluster.Etcd+".pid"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	if err := local.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	writable(t, dyn, ns)
	changeApplied(t, cs, dyn, ns, "etcd", stopped)
	running(t)
}

// resumeWithin is how soon after the API server's return the operator must
// apply a change.
const resumeWithin = 10 * time.Second

// changeApplied changes the Web name's message, once the API server takes
// the write, and requires the operator to apply it to the ConfigMap within
// resumeWithin; when it does not, the operator's lines since the fault
// (at stopped) show how it met it.
func changeApplied(t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface, ns, name string, stopped time.Time) {
	t.Helper()
	patch := []byte(`{"spec":{"message":"after"}}`)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the API server took no change of Web %s/%s", ns, name)
	}
	changed := time.Now()
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cm.Data["message"] == "after", nil
	})
	took := time.Since(changed)
	switch {
	case err != nil:
		t.Errorf("the change was never applied")
	case took > resumeWithin:
		t.Errorf("the change was applied %s after it was made, want within %s", took.Round(10*time.Millisecond), resumeWithin)
	default:
		t.Logf("the change was applied %s after it was made", took.Round(10*time.Millisecond))
		return
	}
	t.Logf("the operator's log since the fault:\n%s", opLog.Since(stopped))
}

// writable waits until the API server writes, to etcd, every kind a
// reconcile of a Web writes in ns: its ConfigMap, Helm's release Secret, the
// Lease. Up returns once /readyz answers, but the API server has an etcd
// client of its own per resource, each reconnecting on its own backoff:
// after a restart of etcd some kinds are writable seconds after others,
// and no operator can apply a change before then.
func writable(t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	began := time.Now()
	for gvr, kind := range map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMap", {Version: "v1", Resource: "secrets"}: "Secret",
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}: "Lease",
	} {
		ri := dyn.Resource(gvr).Namespace(ns)
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
		probe.SetName("probe")
		var last error
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := ri.Create(ctx, probe, metav1.CreateOptions{})
			last = errors.Join(err, ri.Delete(ctx, "probe", metav1.DeleteOptions{}))
			return last == nil, nil
		})
		if err != nil {
			t.Fatalf("the API server took no write of a %s in %s: %v", kind, ns, last)
		}
	}
	t.Logf("the API server wrote each kind a reconcile writes %s after /readyz answered", time.Since(began).Round(10*time.Millisecond))
}

// An upgrade the API server rejects (a Service port of 70000) is rolled back
// and retried with a growing backoff: the events of the rollback's own writes
// and of kube-controller-manager's bookkeeping on the Deployment do not
// requeue it at once. The status names the revision deployed now.
func TestFailingUpgradeBacksOff(t *testing.T) {
	cs, dyn := clients(t)
	ns := newNamespace(t, cs)
	createWeb(t, dyn, ns, "failing", map[string]any{"message": "good"})
	waitCondition(t, dyn, ns, "failing", reconciler.TypeDeployed, 60*time.Second)
	before := latestRevision(t, cs, ns, "failing")

	patch := []byte(`{"spec":{"message":"bad","port":70000}}`)
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "failing", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, dyn, ns, "failing", reconciler.TypeReleaseFailed, 60*time.Second)
	const watched = 20 * time.Second
	time.Sleep(watched)

	// Attempts 1, 2, 4 and 8 s apart (plus up to a tenth): five in 20 s,
	// six with the time the first took to show, each adding two revisions
	// (the failed upgrade and its rollback). Without the backoff this was
	// about 44. Four attempts need 7.7 s of backoff at most, well inside
	// 20 s however slow each attempt: fewer means the upgrade is not
	// retried (one attempt adds 2) or backs off far longer than it should.
	added := latestRevision(t, cs, ns, "failing") - before
	t.Logf("%d revisions in %s of a failing upgrade", added, watched)
	if added > 12 {
		t.Errorf("%d revisions in %s: the failing upgrade is retried without backoff", added, watched)
	}
	if added < 8 {
		t.Errorf("%d revisions in %s, want at least 8 (4 attempts): the failing upgrade is not retried as its backoff says", added, watched)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "failing", metav1.GetOptions{})
	if err != nil || cm.Data["message"] != "good" {
		t.Errorf("ConfigMap after the rollbacks: %v, %v; want the last good message", cm.Data, err)
	}
	u, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), "failing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedInt64(u.Object, "status", "deployedRelease", "version")
	if want := deployedRevision(t, cs, ns, "failing"); got != int64(want) {
		t.Errorf("status.deployedRelease.version %d, but revision %d is deployed", got, want)
	}
}

// latestRevision is the newest revision of a release in Helm's storage.
func latestRevision(t *testing.T, cs kubernetes.Interface, ns, name string) int {
	return revision(t, cs, ns, name, "")
}

func deployedRevision(t *testing.T, cs kubernetes.Interface, ns, name string) int {
	return revision(t, cs, ns, name, "deployed")
}

func revision(t *testing.T, cs kubernetes.Interface, ns, name, status string) int {
	t.Helper()
	sel := "owner=helm,name=" + name
	if status != "" {
		sel += ",status=" + status
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	latest := 0
	for _, s := range secrets.Items {
		if v, err := strconv.Atoi(s.Labels["version"]); err == nil && v > latest {
			latest = v
		}
	}
	return latest
}
