package crdschema

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// server is a real API server and clients for it.
type server struct {
	cfg    *rest.Config
	dyn    dynamic.Interface
	cs     kubernetes.Interface
	mapper meta.RESTMapper
}

// anyScalar are, by chart, paths that land where the Kubernetes API takes
// numbers and strings both (int-or-string fields, quantities, probe
// ports) or that a template defaults to the other kind: they are probed
// with scalars of every kind. Elsewhere a scalar is probed with values of
// its default's kind: a scalar printed into text takes any kind, and the
// CRD keeps the kind its default proves on purpose.
func anyScalar() map[string][]string {
	return map[string][]string{
		"widths": {"service.targetPort", "pdb.minAvailable", "pdb.maxUnavailable", "surge", "probe.port", "cpu", "memory", "initialDelay"},
	}
}

// candidates are the values a probe sets a path to, besides its default:
// one of each shape a chart may mean.
func candidates() map[string]any {
	return map[string]any{
		"a string":                "probe",
		"an integer":              3,
		"a fraction":              1.5,
		"a boolean":               false,
		"a map":                   map[string]any{"probe": "yes"},
		"a list of strings":       []any{"probe"},
		"a list of tolerations":   []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
		"a list of env variables": []any{map[string]any{"name": "PROBE", "value": "yes"}},
		"a percentage":            "50%",
		"a quantity":              "250m",
		"a port name":             "http",
	}
}

// mustAccept are, by chart, cases the chart accepts (Helm renders them into
// objects the API server takes) that a schema stricter than the chart
// refused or pruned: the differential test checks the chart accepts them,
// so it cannot pass by skipping everything.
func mustAccept() map[string][]string {
	return map[string][]string{
		"helpers": {"nameOverride=a string", "fullnameOverride=a string", "tolerations=a list of tolerations",
			"commonLabels=a map", "extraEnv=a map", "replicaCount=an integer", "image.tag=a string", "podAnnotations=a map",
			"serviceAccount=a map", "probePeriodSeconds=an integer"},
		"stack":  {"global=a map", "db.enabled=a boolean", "tags.backend=a boolean", "db.persistence=a map", "db.replicas=an integer"},
		"webapp": {"podLabels=a map", "env=a list of env variables", "replicaCount=an integer", "ratio=a fraction"},
		"widths": {"service.targetPort=a port name", "service.targetPort=an integer", "pdb.minAvailable=a percentage",
			"pdb.maxUnavailable=a percentage", "surge=a percentage", "surge=an integer", "probe.port=an integer", "cpu=a fraction",
			"cpu=an integer", "memory=a quantity", "memory=an integer", "initialDelay=an integer", "initialDelay=a string",
			"podLabels.tier=a string", "note=a string", "replicaCount=null", "pdb.minAvailable=null"},
	}
}

// TestCRDAcceptsWhatTheChartAccepts is the differential test of the CRD
// schema against the chart: for each test chart, each values path its
// templates, Chart.yaml or values.yaml name, set to its default and to
// values of every shape, is rendered by Helm and the objects are created
// (dry run) on a real API server. Whatever the chart accepts that way, the
// API server must accept as a CR of the generated CRD, and keep unpruned.
func TestCRDAcceptsWhatTheChartAccepts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	logf.SetLogger(logr.Discard())
	cfg := clustertest.StartAPIServer(t, nil)
	cs := kubernetes.NewForConfigOrDie(cfg)
	s := &server{cfg: cfg, dyn: dynamic.NewForConfigOrDie(cfg), cs: cs,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))}
	must := mustAccept()
	for _, dir := range testCharts(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			accepted := s.probeChart(t, dir)
			t.Logf("%d values the chart accepts, each accepted by the CRD", len(accepted))
			for _, want := range must[name] {
				if !accepted[want] {
					t.Errorf("the chart did not accept %s: the probe proves nothing about it", want)
				}
			}
		})
	}
}

// testCharts are the charts of chart/testdata and of this package's testdata.
func testCharts(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{filepath.Join("..", "chart", "testdata", "charts"), filepath.Join("testdata", "charts")} {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	return dirs
}

// probeChart installs the chart's CRD and probes every path; it returns
// the "path=candidate" cases the chart accepted.
func (s *server) probeChart(t *testing.T, dir string) map[string]bool {
	ctx := context.Background()
	c, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := c.Name()
	crd, _, err := CRD(c, Options{Group: name + ".crdschema.test", Version: "v1", Kind: "Probe"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(s.cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatalf("the API server refused the CRD: %v", err)
	}
	ns := "probe-" + name
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crs := s.dyn.Resource(schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}).Namespace(ns)
	accepted := map[string]bool{}
	for _, pr := range probes(t, c) {
		for what, v := range pr.tries() {
			spec := nest(pr.path, v)
			if !s.chartAccepts(t, c, ns, spec) {
				continue
			}
			accepted[dotted(pr.path)+"="+what] = true
			s.checkCR(t, crs, crd.Spec.Group+"/v1", spec, dotted(pr.path)+" set to "+what)
		}
	}
	return accepted
}

// checkCR creates a CR with spec and checks the API server kept all of it.
func (s *server) checkCR(t *testing.T, crs dynamic.ResourceInterface, apiVersion string, spec map[string]any, what string) {
	t.Helper()
	ctx := context.Background()
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Probe",
		"metadata": map[string]any{"generateName": "probe-"}, "spec": spec}}
	created, err := crs.Create(ctx, cr, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("the chart accepts %s, the CRD refuses it: %v", what, err)
		return
	}
	if !sameJSON(t, created.Object["spec"], spec) {
		got, _ := json.Marshal(created.Object["spec"])
		t.Errorf("the chart accepts %s, the CRD prunes it: the CR's spec is %s", what, got)
	}
	if err := crs.Delete(ctx, created.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// chartAccepts renders the chart with values and creates every object
// (dry run) whose kind the API server serves: false when Helm or the API
// server refuses.
func (s *server) chartAccepts(t *testing.T, c *chart.Chart, ns string, values map[string]any) bool {
	t.Helper()
	r, err := c.Render(chart.RenderOptions{Namespace: ns, Values: values})
	if err != nil {
		return false
	}
	for _, m := range r.Objects {
		mapping, err := s.mapper.RESTMapping(m.GroupVersionKind().GroupKind(), m.GroupVersionKind().Version)
		if err != nil {
			continue // a kind this API server does not serve (ServiceMonitor, a removed API...)
		}
		obj := m.Object.DeepCopy()
		ri := s.dyn.Resource(mapping.Resource)
		var client dynamic.ResourceInterface = ri
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			obj.SetNamespace(ns)
			client = ri.Namespace(ns)
		}
		if _, err := client.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false
		}
	}
	return true
}

// probe is a values path to probe and the shape of value the chart means
// there: its default's when it is not empty (a map's own fields are probed
// apart), a boolean for conditions and tags, a map for global; any shape
// when nothing says ("").
type probe struct {
	path  []string
	def   any
	shape string
}

// tries are the values to set the path to: its default, and each candidate
// of the shape the chart means.
func (p probe) tries() map[string]any {
	out := map[string]any{}
	for what, v := range candidates() {
		if meant(p.shape, v) {
			out[what] = v
		}
	}
	if p.def != nil {
		out["its default"] = p.def
		out["null"] = nil // Helm's way to delete a default
	}
	return out
}

func meant(want string, v any) bool {
	got := shapeOf(v)
	switch want {
	case "":
		return true
	case "number":
		return got == "integer" || got == "number"
	case "declared map":
		return false
	case "scalar":
		return got == "integer" || got == "number" || got == "string"
	}
	return got == want
}

// shapeOf is a value's JSON type, integers apart, lists with their first
// item's; "" for empty values, which prove no shape.
func shapeOf(v any) string {
	switch v := v.(type) {
	case bool:
		return "boolean"
	case string:
		if v == "" {
			return ""
		}
		return "string"
	case int, int64:
		return "integer"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case map[string]any:
		if len(v) == 0 {
			return ""
		}
		return "map"
	case []any:
		if len(v) == 0 {
			return ""
		}
		return "list of " + shapeOf(v[0])
	}
	return ""
}

// probes are the values paths the chart's templates (subcharts' too), its
// dependencies' conditions and tags, and its values.yaml files name.
func probes(t *testing.T, c *chart.Chart) []probe {
	t.Helper()
	_, usage, _, err := specOf(c.Helm, c.Name())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]probe{}
	scalars := map[string]bool{}
	for _, p := range anyScalar()[c.Name()] {
		scalars[p] = true
	}
	add := func(p []string, shape string) {
		if len(p) == 0 {
			return
		}
		def, _ := valueAt(c.Helm, p)
		if scalars[dotted(p)] {
			shape = "scalar"
		}
		if shape == "" {
			if shape = shapeOf(def); shape == "map" {
				shape = "declared map" // its fields are probed one by one
			}
		}
		seen[strings.Join(p, "\x1f")] = probe{path: p, def: def, shape: shape}
	}
	for _, u := range usage {
		add(u.Path, "")
	}
	for _, p := range valuesLeaves(c.Helm.Values, nil) {
		add(p, "")
	}
	for _, sub := range chart.Subcharts(c.Helm) {
		for _, p := range valuesLeaves(sub.Chart.Values, []string{sub.Key}) {
			add(p, "")
		}
		for _, cond := range strings.Split(sub.Condition, ",") {
			if cond = strings.TrimSpace(cond); cond != "" {
				add(strings.Split(cond, "."), "boolean")
			}
		}
	}
	for _, dep := range c.Helm.Metadata.Dependencies {
		for _, tag := range dep.Tags {
			add([]string{"tags", tag}, "boolean")
		}
	}
	if len(c.Helm.Metadata.Dependencies) > 0 {
		add([]string{"global"}, "map")
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]probe, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out
}

// valuesLeaves lists the paths of values' leaves (empty maps included).
func valuesLeaves(values map[string]any, prefix []string) [][]string {
	var out [][]string
	for k, v := range values {
		p := append(append([]string(nil), prefix...), k)
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			out = append(out, valuesLeaves(m, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// valueAt is the chart's default at path (subcharts' below their keys).
func valueAt(ch *helmchart.Chart, path []string) (any, bool) {
	var cur any = ch.Values
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			break
		}
	}
	if cur != nil {
		return cur, true
	}
	for _, sub := range chart.Subcharts(ch) {
		if sub.Key == path[0] {
			return valueAt(sub.Chart, path[1:])
		}
	}
	return nil, false
}

// nest is values setting path (elements as one-item lists) to v.
func nest(path []string, v any) map[string]any {
	var build func(i int) any
	build = func(i int) any {
		if i == len(path) {
			return v
		}
		if path[i] == Elem {
			return []any{build(i + 1)}
		}
		return map[string]any{path[i]: build(i + 1)}
	}
	out, _ := build(0).(map[string]any)
	return out
}

// sameJSON tells whether a and b encode to the same JSON.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
