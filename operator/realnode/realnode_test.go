package realnode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
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
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
	"github.com/chartpilot/chartpilot/scaffold"
	"github.com/chartpilot/chartpilot/scorecard"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

var helloGVR = schema.GroupVersionResource{Group: "charts.example.com", Version: "v1alpha1", Resource: "hellos"}

// On one real node: the runtime rolls back an upgrade whose image exits,
// and the scorecard's chartpilot-autorollback passes for the example
// project.
func TestAutoRollbackOnRealNode(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := node.Get(t)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an image that exits", func(t *testing.T) { imageThatExits(t, ctx, c, cfg) })
	t.Run("scorecard chartpilot-autorollback", func(t *testing.T) { scorecardAutorollback(t, ctx, c, cfg) })
}

// imageThatExits: the example chart's operand runs on the real node and
// its release is recorded healthy; an upgrade to an image whose process
// exits (opm, with no arguments, prints its usage and ends) crash-loops and
// is rolled back to it well before its 3-minute deadline: the CR says why,
// and the operand serves again.
func imageThatExits(t *testing.T, ctx context.Context, c *cluster.Cluster, cfg *rest.Config) {
	installCRD(t, cfg)
	startOperator(t, cfg)
	cs, dyn := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	ri := dyn.Resource(helloGVR).Namespace("default")
	patch := func(p map[string]any) {
		t.Helper()
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Patch(ctx, "hello", types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	operand := repository(c.Image(images.HelloServer))
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "charts.example.com/v1alpha1", "kind": "Hello",
		"metadata": map[string]any{"name": "hello", "namespace": "default",
			"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "20s"}},
		"spec": map[string]any{"replicaCount": 1, "image": map[string]any{"repository": operand, "tag": "local"}},
	}}
	if _, err := ri.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// While the operator still runs, which uninstalls the release.
	t.Cleanup(func() { deleteCR(t, ri, "hello") })
	began := time.Now()
	waitEvent(t, ctx, cs, reconciler.EventHealthVerified, 3*time.Minute)
	t.Logf("revision 1 (%s) ready and recorded healthy %s after the CR's creation", operand, time.Since(began).Round(100*time.Millisecond))
	healthy, err := ri.Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	healthyDigest, _, _ := unstructured.NestedString(healthy.Object, "status", "deployedRelease", "digest")

	// The upgrade's image exits; its deadline is long, so only the crash
	// loop can bring the rollback in time.
	exits := repository(c.Image(images.OPM))
	patch(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "3m"}},
		"spec":     map[string]any{"image": map[string]any{"repository": exits}},
	})
	began = time.Now()
	var st reconciler.Status
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st = reconciler.StatusOf(u)
		c := meta.FindStatusCondition(st.Conditions, reconciler.TypeReleaseFailed)
		return c != nil && c.Reason == reconciler.ReasonUpgradeUnhealthy, nil
	})
	if err != nil {
		t.Fatalf("no rollback within 3m: status %+v", st)
	}
	took := time.Since(began)
	reason := meta.FindStatusCondition(st.Conditions, reconciler.TypeReleaseFailed).Message
	t.Logf("broken upgrade to %s rolled back %s after the patch: %s", exits, took.Round(100*time.Millisecond), reason)
	if !strings.Contains(reason, "CrashLoopBackOff") || !strings.Contains(reason, "revision 2") {
		t.Errorf("reason %q, want revision 2 in CrashLoopBackOff", reason)
	}
	// Revision 3 is the rollback; a forced one fails on the bound claim and
	// is done again as a patch, revision 4.
	if d := st.DeployedRelease; d == nil || d.Version < 3 || d.Digest != healthyDigest {
		t.Errorf("deployed %+v, want a rollback to revision 1's chart and values (digest %s)", d, healthyDigest)
	}
	waitEvent(t, ctx, cs, reconciler.EventUnhealthyRolledBack, time.Minute)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st = reconciler.StatusOf(u)
		return meta.IsStatusConditionTrue(st.Conditions, reconciler.TypeReady), nil
	})
	if err != nil {
		t.Fatalf("the operand is not Ready again after the rollback: %+v", st)
	}
	t.Logf("operand Ready again %s after the patch", time.Since(began).Round(100*time.Millisecond))
}

// repository is the repository of an image reference by digest.
func repository(ref string) string {
	repo, _, _ := strings.Cut(ref, "@")
	return repo
}

func waitEvent(t *testing.T, ctx context.Context, cs kubernetes.Interface, reason string, timeout time.Duration) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=hello,involvedObject.kind=Hello"})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range events.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event within %s; events:\n%s", reason, timeout, strings.Join(seen, "\n"))
	}
}

// scorecardAutorollback: chartpilot-autorollback, as a project's
// scorecard config runs it (default patch: images nobody can pull), passes
// for the example project whose sample runs the registry's operand.
func scorecardAutorollback(t *testing.T, ctx context.Context, c *cluster.Cluster, cfg *rest.Config) {
	dir := filepath.Join(t.TempDir(), "hello-operator")
	if err := scaffold.Init(scaffold.Options{Dir: dir, APIOptions: scaffold.APIOptions{Chart: filepath.Join("..", "..", "helm-charts", "hello")}}); err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(dir, "config", "samples", "charts.example.com_v1alpha1_hello.yaml")
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	var cr map[string]any
	if err := yaml.Unmarshal(data, &cr); err != nil {
		t.Fatal(err)
	}
	spec, _ := cr["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["image"] = map[string]any{"repository": repository(c.Image(images.HelloServer)), "tag": "local"}
	cr["spec"] = spec
	if data, err = yaml.Marshal(cr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sample, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Generate(ctx, bundle.GenerateOptions{Dir: dir, Version: "0.1.0"}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	list, err := scorecard.Run(ctx, scorecard.Options{
		BundleDir: filepath.Join(dir, "bundle"), Config: cfg, WaitTime: time.Minute,
		Selector: labels.SelectorFromSet(labels.Set{"test": scorecardtests.ChartpilotAutorollback + "-test"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("ran %d tests, want %s", len(list.Items), scorecardtests.ChartpilotAutorollback)
	}
	res := list.Items[0].Status.Results[0]
	t.Logf("%s: %s in %s\n%s", res.Name, res.State, time.Since(began).Round(time.Second), res.Log)
	if res.State != v1alpha3.PassState {
		t.Errorf("%s: %s: %s", res.Name, res.State, strings.Join(res.Errors, "\n"))
	}
}

func installCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "hellos.charts.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "charts.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Hello", ListKind: "HelloList", Plural: "hellos", Singular: "hello"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The cluster is shared: the next test may install it again.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting CRD %s: %v", crd.Name, err)
			return
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("CRD %s not gone: %v", crd.Name, err)
		}
	})
	if err := crdready.Wait(context.Background(), cfg, []string{crd.Name}, crdready.Options{Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// deleteCR deletes a custom resource and waits until the operator has
// uninstalled its release and removed its finalizer.
func deleteCR(t *testing.T, ri dynamic.ResourceInterface, name string) {
	ctx := context.Background()
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", name, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("%s not uninstalled: %v", name, err)
	}
}

// startOperator runs the runtime on the example chart until the test ends.
func startOperator(t *testing.T, cfg *rest.Config) {
	t.Helper()
	path := filepath.Join("..", "..", "helm-charts", "hello")
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := operator.New(operator.Options{
		Watches: []watches.Watch{{Group: helloGVR.Group, Version: helloGVR.Version, Kind: "Hello", Chart: path,
			LoadedChart: ch, LabelSelector: labels.Everything(), DryRunOption: watches.DryRunClient}},
		Config: cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0", Log: logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
}
