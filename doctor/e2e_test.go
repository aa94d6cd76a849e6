package doctor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cmd/cli"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
	"github.com/chartpilot/chartpilot/rbac"
)

var env *clustertest.Env

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, &env)) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := olm.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchesFile writes a watches.yaml for kind Widget of group with a chart of testdata.
func watchesFile(t *testing.T, group, chartName string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "charts", chartName))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "watches.yaml")
	content := fmt.Sprintf("- group: %s\n  version: v1\n  kind: Widget\n  chart: %s\n", group, abs)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, opts doctor.Options) *doctor.Report {
	t.Helper()
	opts.Config = env.Config
	rep, err := doctor.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// only returns the one check named name, failing the test otherwise.
func only(t *testing.T, rep *doctor.Report, name string) doctor.Check {
	t.Helper()
	cs := rep.Find(name)
	if len(cs) != 1 {
		t.Fatalf("%d %q checks, want 1: %+v", len(cs), name, rep.Checks)
	}
	return cs[0]
}

func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func TestCRDMissing(t *testing.T) {
	clustertest.SkipIfShort(t)
	rep := run(t, doctor.Options{Kind: "Gadget.missing.example.com", Namespace: "default"})
	c := only(t, rep, doctor.CheckCRD)
	if c.Severity != doctor.Fail {
		t.Errorf("CRD check %+v, want fail", c)
	}
	mustContain(t, "message", c.Message, "no CRD serves Gadget.missing.example.com: it is not installed")
	mustContain(t, "fix", c.Fix, "chartpilot olm subscribe")
	if !rep.Failed() {
		t.Error("report not failed")
	}
}

// installCRD installs the Widget CRD of group and waits until it is served.
func installCRD(t *testing.T, c client.Client, group string) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", Singular: "widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}},
			}},
		},
	}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	if err := crdready.Wait(ctx, env.Config, []string{crd.Name}, crdready.Options{Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

func ptrTrue() *bool { b := true; return &b }

// Custom resources whose last reconcile failed, succeeded or never happened.
func TestCustomResourceConditions(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "doctor")
	group := "conds.example.com"
	installCRD(t, c, group)
	crs := map[string][]any{
		"failed": {
			map[string]any{"type": "Deployed", "status": "False", "reason": "InstallError", "message": "x", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "ReleaseFailed", "status": "True", "reason": "InstallError", "message": `configmaps "failed-config" is forbidden: User "system:serviceaccount:op:op" cannot create resource "configmaps"`, "lastTransitionTime": "2026-01-01T00:00:00Z"},
		},
		"good": {
			map[string]any{"type": "Deployed", "status": "True", "reason": "InstallSuccessful", "message": "release good installed", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "Ready", "status": "True", "reason": "ObjectsReady", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		},
		"untouched": nil,
	}
	for name, conds := range crs {
		cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": name, "namespace": ns}}}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		if conds != nil {
			cr.Object["status"] = map[string]any{"conditions": conds}
			if err := c.Status().Update(ctx, cr); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep := run(t, doctor.Options{Kind: "Widget." + group, Namespace: ns})
	got := map[string]doctor.Check{}
	for _, ch := range rep.Find(doctor.CheckCR) {
		got[ch.Object] = ch
	}
	tests := []struct {
		object   string
		severity olm.Severity
		message  string
	}{
		{ns + "/widget/failed", doctor.Fail, `ReleaseFailed: InstallError: configmaps "failed-config" is forbidden`},
		{ns + "/widget/good", doctor.Pass, "Deployed: InstallSuccessful: release good installed"},
		{ns + "/widget/untouched", doctor.Warn, "no status conditions: the operator has not reconciled it"},
	}
	for _, tt := range tests {
		ch := got[tt.object]
		if ch.Severity != tt.severity || !strings.Contains(ch.Message, tt.message) {
			t.Errorf("%s: %+v, want %s %q", tt.object, ch, tt.severity, tt.message)
		}
	}
	if c := only(t, rep, doctor.CheckCRD); c.Severity != doctor.Pass {
		t.Errorf("CRD check %+v", c)
	}

	// An operator watching other namespaces (an AllNamespaces install, or
	// an OperatorGroup's targets): its custom resources are looked for
	// there, not in the operator's namespace alone.
	other := olmtest.Namespace(t, c, "doctor-watched")
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "elsewhere", "namespace": other}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		watch []string
		want  []string
	}{
		{name: "operator namespace only", want: []string{ns + "/widget/failed", ns + "/widget/good", ns + "/widget/untouched"}},
		{name: "watched namespaces", watch: []string{other, ns}, want: []string{other + "/widget/elsewhere", ns + "/widget/failed", ns + "/widget/good", ns + "/widget/untouched"}},
		{name: "all namespaces", watch: []string{""}, want: []string{other + "/widget/elsewhere", ns + "/widget/failed", ns + "/widget/good", ns + "/widget/untouched"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := run(t, doctor.Options{Kind: "Widget." + group, Namespace: ns, WatchNamespaces: tt.watch})
			var got []string
			for _, ch := range rep.Find(doctor.CheckCR) {
				got = append(got, ch.Object)
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("custom resources examined %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRemovedAPIInChart(t *testing.T) {
	clustertest.SkipIfShort(t)
	rep := run(t, doctor.Options{WatchesFile: watchesFile(t, "legacy.example.com", "legacy"), Namespace: "default"})
	c := only(t, rep, doctor.CheckRemovedAPIs)
	if c.Severity != doctor.Fail || c.Object != "legacy/templates/pdb.yaml" {
		t.Errorf("removed API check %+v", c)
	}
	mustContain(t, "message", c.Message, "policy/v1beta1 PodDisruptionBudget is no longer served since Kubernetes 1.25", "use apiVersion policy/v1")
}

// derivedRules are the rules rbac.Derive gives the app chart's operator, as
// the YAML flow sequences of a bundle's CSV, without the rules of skip:
// the namespaced permissions and the cluster-wide ones.
func derivedRules(t *testing.T, group, ns string, skip string) (rules, clusterRules []string) {
	t.Helper()
	ch, err := chart.Load(filepath.Join("testdata", "charts", "app"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rbac.Derive(rbac.Options{Chart: ch, Owner: rbac.Owner{Group: group, Resource: "widgets"}, WatchNamespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == skip {
			continue
		}
		data, err := json.Marshal(r.PolicyRule)
		if err != nil {
			t.Fatal(err)
		}
		if r.Namespaced {
			rules = append(rules, string(data))
		} else {
			clusterRules = append(clusterRules, string(data))
		}
	}
	return rules, clusterRules
}

// An operator installed through OLM, once with the RBAC its chart needs and
// once without the ConfigMaps rule: the doctor names the exact missing rule.
func TestInstalledOperator(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// skip is the resource whose rule the bundle leaves out
		skip string
		// check asserts the report
		check func(t *testing.T, ns string, b olmtest.Bundle, rep *doctor.Report)
	}{
		{
			name: "all rules",
			check: func(t *testing.T, ns string, b olmtest.Bundle, rep *doctor.Report) {
				for _, c := range rep.Checks {
					if c.Severity == doctor.Fail {
						t.Errorf("failed check: %+v", c)
					}
				}
				for _, name := range []string{olm.CheckCatalogSource, olm.CheckSubscription, olm.CheckCSV, doctor.CheckCRD, doctor.CheckDeployment, doctor.CheckPods, doctor.CheckRBAC, doctor.CheckRemovedAPIs} {
					if c := only(t, rep, name); c.Severity != doctor.Pass {
						t.Errorf("%s: %+v, want pass", name, c)
					}
				}
			},
		},
		{
			name: "no configmaps rule",
			skip: "configmaps",
			check: func(t *testing.T, ns string, b olmtest.Bundle, rep *doctor.Report) {
				c := only(t, rep, doctor.CheckRBAC)
				if c.Severity != doctor.Fail || c.Object != "serviceaccount/"+b.ServiceAccount() {
					t.Errorf("RBAC check %+v", c)
				}
				mustContain(t, "message", c.Message,
					fmt.Sprintf(`configmaps is forbidden: system:serviceaccount:%s:%s cannot get, list, watch, create, update, patch, delete resource "configmaps" in API group "" in the namespace %s`, ns, b.ServiceAccount(), ns),
					"needed for: v1 ConfigMap (app/templates/configmap.yaml)")
				mustContain(t, "fix", c.Fix, `add to the operator's Role in `+ns+`: {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}`)
			},
		},
	}
	ctx := context.Background()
	c := newClient(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := olmtest.Namespace(t, c, "doctor")
			b := olmtest.Bundle{Package: fmt.Sprintf("doctored%d", i), Version: "0.1.0"}
			b.Rules, b.ClusterRules = derivedRules(t, b.Group(), ns, tt.skip)
			addr := olmtest.Serve(t, olmtest.Catalog(t, b))
			if _, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: b.Package, Namespace: ns, CatalogAddress: addr}); err != nil {
				t.Fatal(err)
			}
			if _, err := olm.Wait(ctx, c, b.Package, ns, olm.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
			wf := watchesFile(t, b.Group(), "app")
			began := time.Now()
			rep := run(t, doctor.Options{Package: b.Package, Namespace: ns, WatchesFile: wf})
			t.Logf("doctor ran %d checks in %s", len(rep.Checks), time.Since(began).Round(time.Millisecond))
			tt.check(t, ns, b, rep)
			// By kind, without naming the package: the doctor finds the
			// CSV owning the CRD, and through it the same checks.
			byKind := run(t, doctor.Options{Kind: "Widget." + b.Group(), Namespace: ns, WatchesFile: wf})
			tt.check(t, ns, b, byKind)

			out, err := chartpilot(t, "doctor", "--package", b.Package, "-n", ns, "--watches-file", wf)
			if (err != nil) != rep.Failed() {
				t.Errorf("doctor command: error %v, report failed %v\n%s", err, rep.Failed(), out)
			}
			t.Logf("chartpilot doctor:\n%s", out)
			if _, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, DeleteCRDs: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func chartpilot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := cli.NewRootCommand(streams)
	// The kubectl flags belong to the commands that reach a cluster, not
	// to the root: they follow the command's name.
	cmd.SetArgs(append(args, "--kubeconfig", env.Kubeconfig))
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

// OLM failures: a CatalogSource at a dead address, a Subscription to a
// package the catalog does not have. OLM takes a few seconds to notice
// each, so the doctor runs until it names the failure.
func TestOLMFailures(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// subscribe returns the options of the Subscription to make
		subscribe func(t *testing.T, ns string) olm.SubscribeOptions
		check     string
		message   string
		fix       string
	}{
		{
			name: "dead catalog address",
			subscribe: func(t *testing.T, ns string) olm.SubscribeOptions {
				return olm.SubscribeOptions{Package: "unreachable", Namespace: ns, CatalogAddress: "127.0.0.1:1"}
			},
			check: olm.CheckCatalogSource, message: "OLM cannot reach the registry at 127.0.0.1:1", fix: "chartpilot catalog serve DIR --address 127.0.0.1:1",
		},
		{
			name: "package not in the catalog",
			subscribe: func(t *testing.T, ns string) olm.SubscribeOptions {
				addr := olmtest.Serve(t, olmtest.Catalog(t, olmtest.Bundle{Package: "present", Version: "0.1.0"}))
				return olm.SubscribeOptions{Package: "absent", Namespace: ns, CatalogAddress: addr}
			},
			check: olm.CheckSubscription, message: "ResolutionFailed: ", fix: "check the package, channel and startingCSV",
		},
		{
			// The same, as the catalog itself says it: asked for its packages.
			name: "catalog without the package",
			subscribe: func(t *testing.T, ns string) olm.SubscribeOptions {
				addr := olmtest.Serve(t, olmtest.Catalog(t, olmtest.Bundle{Package: "present", Version: "0.1.0"}))
				return olm.SubscribeOptions{Package: "absent", Namespace: ns, CatalogAddress: addr}
			},
			check: olm.CheckCatalogSource, message: "serves no package absent (it serves present)", fix: "chartpilot catalog serve DIR --address",
		},
	}
	ctx := context.Background()
	c := newClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := olmtest.Namespace(t, c, "doctor")
			opts := tt.subscribe(t, ns)
			if _, err := olm.Subscribe(ctx, c, opts); err != nil {
				t.Fatal(err)
			}
			var last doctor.Check
			began := time.Now()
			err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
				rep := run(t, doctor.Options{Package: opts.Package, Namespace: ns})
				last = only(t, rep, tt.check)
				// Until OLM reaches a new registry, the CatalogSource
				// check fails for that: wait for the failure named.
				return last.Severity == doctor.Fail && strings.Contains(last.Message, tt.message), nil
			})
			if err != nil {
				t.Fatalf("the doctor did not fail %s: last %+v", tt.check, last)
			}
			t.Logf("named after %s: %s", time.Since(began).Round(time.Second), last.Message)
			mustContain(t, "message", last.Message, tt.message)
			mustContain(t, "fix", last.Fix, tt.fix)
		})
	}
}
