package corpus_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/corpus"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/monitoringcrd"
	"github.com/chartpilot/chartpilot/internal/testbin"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/operator/watches"
)

var update = flag.Bool("update", false, "write docs/corpus.md from this run")

// The goal of the values sets that must pass: the CR accepted with nothing
// pruned, and every object of its render accepted under the operator's RBAC.
const valuesSetGoal = 0.95

// unservedKinds are the kinds a chart may render that the test API server
// does not serve (CRDs of other projects: Gateway API, the VPA; and
// APIService, whose service does not run here): objects of them go
// unchecked. Any other kind the server lacks fails the test, so that
// "unchecked" cannot grow to hide a whole chart.
var unservedKinds = []string{"APIService", "GRPCRoute", "HTTPRoute", "ListenerSet", "VerticalPodAutoscaler"}

// sharedCorpusCharts is how many charts the shared corpus holds.
const sharedCorpusCharts = 21

// TestCorpus takes every chart of the corpus (shared/charts beside the
// repository) through what a user does: init, make bundle, the static
// scorecard; then, on a real API server, each values set the chart ships
// (and its defaults) as the spec of a custom resource of the generated CRD,
// and the chart rendered from it created object by object as the
// operator's ServiceAccount, with the RBAC OLM grants from the CSV, in every
// install mode the CSV supports.
func TestCorpus(t *testing.T) {
	clustertest.SkipIfShort(t)
	dirs := corpus.Charts(t)
	// The shared corpus whole: a corpus of one chart would pass as easily.
	if os.Getenv(corpus.EnvDir) == "" && len(dirs) < sharedCorpusCharts {
		t.Fatalf("the shared chart corpus holds %d charts, want its %d (SOURCES.md)", len(dirs), sharedCorpusCharts)
	}
	bin := testbin.Chartpilot(t)
	env := newAPIServer(t)
	var rows []*result
	for _, dir := range dirs {
		ch := chartCase{name: filepath.Base(dir), dir: dir, sets: append([]corpus.ValueSet{{Name: "defaults", Values: map[string]any{}}}, corpus.CIValues(t, dir)...)}
		r := &result{chart: ch.name}
		rows = append(rows, r)
		t.Run(ch.name, func(t *testing.T) { checkChart(t, bin, env, ch, r) })
	}
	summarize(t, rows)
}

// chartCase is a chart of the corpus and the values sets it is tried with.
type chartCase struct {
	name, dir string
	sets      []corpus.ValueSet
}

// result is what the corpus test found for one chart.
type result struct {
	chart                   string
	initTime                time.Duration
	warnings                int
	init, bundle, scorecard string // "" when it passed, else why not
	valuesSets              []valuesResult
}

// knownFailure is a values set known to fail: why, and a piece of the
// failure's text that says it fails for that reason and no other.
type knownFailure struct{ why, match string }

// knownFailures are the values sets known to fail, by chart/set; any other
// failure fails the test, and so does a known one that passes or fails for
// another reason (its text lacks match).
var knownFailures = map[string]knownFailure{
	"argo-cd/ci/ha-autoscaling-values.yaml": {why: "it enables the redis-ha subchart, which the corpus does not vendor (SOURCES.md)", match: "redis-ha"},
	"argo-cd/ci/ha-static-values.yaml":      {why: "it enables the redis-ha subchart, which the corpus does not vendor (SOURCES.md)", match: "redis-ha"},
	"prometheus/ci/10-namespaced-sd-values.yaml": {why: "its values give the chart's ClusterRole rules no explored gate renders, " +
		"which the operator must hold to create it", match: "attempting to grant RBAC permissions not currently held"},
	"promtail/ci/service-values.yaml": {why: "an Ingress per extraPorts entry that sets ingress: a gate inside a range over a map, " +
		"which gate exploration does not reach", match: "ingresses"},
}

// valuesResult is one values set of a chart.
type valuesResult struct {
	name string
	// accepted: the CR passed; why not otherwise.
	cr string
	// objects counts the render's objects checked per install mode; refused
	// names each refusal, unchecked the kinds not served here.
	objects   int
	refused   []string
	unchecked []string
	// known says why the failure is known, for one in knownFailures.
	known string
}

func (v valuesResult) passed() bool { return v.cr == "" && len(v.refused) == 0 }

// apiServer is the real API server the charts are checked against.
type apiServer struct {
	cfg *rest.Config
	c   client.Client
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	cfg := clustertest.StartAPIServer(t, nil)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := &apiServer{cfg: cfg, c: c}
	// ServiceMonitors and PrometheusRules are what charts most often
	// create besides built-in kinds: serve them, as a monitored cluster does.
	env.installCRDs(t, monitoringcrd.CRDs())
	return env
}

func (a *apiServer) installCRDs(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	var names []string
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = ""
		if err := a.c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	if err := crdready.Wait(ctx, a.cfg, names, crdready.Options{Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// impersonating returns a client acting as user.
func (a *apiServer) impersonating(t *testing.T, user string) client.Client {
	cfg := rest.CopyConfig(a.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkChart(t *testing.T, bin string, env *apiServer, ch chartCase, r *result) {
	proj := filepath.Join(t.TempDir(), "p")
	began := time.Now()
	out, err := run(t, "", bin, "init", proj, "--domain", "example.com", "--chart", ch.dir)
	r.initTime = time.Since(began)
	r.warnings = strings.Count(out, "warning:")
	if err != nil {
		r.init = firstLine(out)
		for _, set := range ch.sets {
			r.valuesSets = append(r.valuesSets, valuesResult{name: set.Name, cr: "init failed"})
		}
		t.Fatalf("init: %v\n%s", err, out)
	}
	img := "example.com/" + ch.name + "-operator:v0.1.0"
	if out, err := run(t, proj, "make", "bundle", "IMG="+img, "CHARTPILOT="+bin); err != nil {
		r.bundle = lastLine(out)
		t.Fatalf("make bundle: %v\n%s", err, out)
	}
	b, err := manifests.GetBundleFromDir(filepath.Join(proj, "bundle", "manifests"))
	if err != nil {
		r.bundle = err.Error()
		t.Fatal(err)
	}
	if out, err := run(t, proj, bin, "scorecard", "bundle", "-l", "suite!=chartpilot"); err != nil {
		r.scorecard = lastLine(out)
		t.Errorf("scorecard: %v\n%s", err, out)
	}
	ws, err := watches.Load(filepath.Join(proj, "watches.yaml"), watches.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	env.installCRDs(t, b.V1CRDs)
	c, err := chart.Load(filepath.Join(proj, filepath.FromSlash(w.Chart)))
	if err != nil {
		t.Fatal(err)
	}
	// The chart's own CRDs (crds/), which Helm installs first.
	rendered, err := c.Render(chart.RenderOptions{})
	if err != nil {
		t.Fatalf("rendering the chart's defaults for its CRDs: %v", err)
	}
	if len(rendered.CRDs) > 0 {
		var crds []*apiextensionsv1.CustomResourceDefinition
		for _, m := range rendered.CRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object.Object, crd); err != nil || crd.Name == "" {
				t.Fatalf("the chart's CRD %s of %s is no CustomResourceDefinition (err %v)", crd.Name, m.Source, err)
			}
			crds = append(crds, crd)
		}
		env.installCRDs(t, crds)
	}
	for i, set := range ch.sets {
		name, values := set.Name, set.Values
		v := valuesResult{name: name}
		v.cr = checkCR(t, env, w, fmt.Sprintf("%s-%d", short(ch.name), i), values)
		for _, mode := range supportedModes(b.CSV) {
			checkInstall(t, env, c, b.CSV, installCase{mode: mode, id: fmt.Sprintf("%s-%d-%s", short(ch.name), i, modeID(mode)), values: values}, &v)
		}
		known, isKnown := knownFailures[ch.name+"/"+name]
		failure := "CR: " + v.cr + "; refused: " + strings.Join(v.refused, "; ")
		switch {
		case !v.passed() && !isKnown:
			t.Errorf("values %s: %s", name, failure)
		case !v.passed() && !strings.Contains(failure, known.match):
			t.Errorf("values %s fails, but not as known (%s: its failure would say %q): %s", name, known.why, known.match, failure)
		case !v.passed():
			v.known = known.why
			t.Logf("values %s fails, as known (%s): %s", name, known.why, failure)
		case isKnown:
			t.Errorf("values %s passes now: take it off knownFailures", name)
		}
		r.valuesSets = append(r.valuesSets, v)
	}
	checkRelatedImages(t, b.CSV, c)
}

// checkCR creates a custom resource whose spec is values and says why it
// was refused or pruned, or "".
func checkCR(t *testing.T, env *apiServer, w watches.Watch, ns string, values map[string]any) string {
	t.Helper()
	ctx := context.Background()
	createNamespace(t, env.c, ns)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": w.Group + "/" + w.Version, "kind": w.Kind,
		"metadata": map[string]any{"name": "corpus", "namespace": ns},
		"spec":     values,
	}}
	sent, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.c.Create(ctx, cr); err != nil {
		return "refused: " + err.Error()
	}
	var want, got any
	_ = json.Unmarshal(sent, &want)
	spec, _, _ := unstructured.NestedFieldNoCopy(cr.Object, "spec")
	gotJSON, _ := json.Marshal(spec)
	_ = json.Unmarshal(gotJSON, &got)
	if len(values) == 0 && spec == nil {
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return "pruned: " + strings.Join(corpus.Lost(want, got, "spec"), ", ")
	}
	return ""
}

// installCase is one install of a render under one install mode.
type installCase struct {
	mode   v1alpha1.InstallModeType
	id     string
	values map[string]any
}

// checkInstall grants the CSV's permissions as OLM would in the install
// mode, renders the chart with the values into the watched namespace, and
// creates each object as the operator's ServiceAccount.
func checkInstall(t *testing.T, env *apiServer, c *chart.Chart, csv *v1alpha1.ClusterServiceVersion, ic installCase, v *valuesResult) {
	t.Helper()
	ctx := context.Background()
	opNS, appNS := "op-"+ic.id, "app-"+ic.id
	createNamespace(t, env.c, opNS)
	createNamespace(t, env.c, appNS)
	targets := map[v1alpha1.InstallModeType][]string{
		v1alpha1.InstallModeTypeOwnNamespace:    {opNS},
		v1alpha1.InstallModeTypeSingleNamespace: {appNS},
		v1alpha1.InstallModeTypeMultiNamespace:  {appNS, opNS},
	}[ic.mode]
	releaseNS := appNS
	if ic.mode == v1alpha1.InstallModeTypeOwnNamespace {
		releaseNS = opNS
	}
	grants := olm.Grants(csv, olm.GrantOptions{Namespace: opNS, Targets: targets, Prefix: ic.id})
	for _, g := range grants {
		if err := env.c.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("granting %s: %v", g.GetName(), err)
		}
	}
	var created []client.Object
	// The test API server runs no controllers: what is not deleted here
	// stays (and Services keep their cluster IPs, of which it has few).
	// CRDs stay: each create and delete of one makes the API server rebuild
	// its OpenAPI (minutes of its CPU for a chart with large CRDs over all
	// its cases), and a create of one that exists is still authorized first
	// (AlreadyExists comes only after the permission check). Namespaces a
	// chart creates stay too: without a namespace controller a deleted one
	// is terminating for ever, and the next install mode's objects in it
	// would be refused.
	defer func() {
		for _, o := range append(created, grants...) {
			if kind := o.GetObjectKind().GroupVersionKind().Kind; kind == "CustomResourceDefinition" || kind == "Namespace" {
				continue
			}
			if err := env.c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
	}()
	sa := ""
	for _, g := range grants {
		if _, ok := g.(*corev1.ServiceAccount); ok {
			sa = g.GetName()
			break
		}
	}
	rendered, err := c.Render(chart.RenderOptions{ReleaseName: "r" + strings.ReplaceAll(ic.id, "-", ""), Namespace: releaseNS, Values: ic.values})
	if err != nil {
		v.refused = append(v.refused, fmt.Sprintf("%s: render: %v", ic.mode, err))
		return
	}
	oc := env.impersonating(t, "system:serviceaccount:"+opNS+":"+sa)
	for _, m := range rendered.Objects {
		if strings.Contains(m.Hook, "test") {
			continue // helm test hooks: the operator never runs them
		}
		obj := m.Object.DeepCopy()
		namespaced, err := env.c.IsObjectNamespaced(obj)
		if meta.IsNoMatchError(err) {
			uncheck(t, v, obj.GetKind())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(releaseNS)
		}
		v.objects++
		err = oc.Create(ctx, obj)
		switch {
		case err == nil:
			created = append(created, obj)
		case apierrors.IsAlreadyExists(err):
		case meta.IsNoMatchError(err):
			uncheck(t, v, obj.GetKind())
		default:
			v.refused = append(v.refused, fmt.Sprintf("%s: %s %s: %v", ic.mode, obj.GetKind(), obj.GetName(), err))
		}
	}
}

// checkRelatedImages checks that the CSV's relatedImages hold the image of
// every container the chart runs with its defaults and each values set.
func checkRelatedImages(t *testing.T, csv *v1alpha1.ClusterServiceVersion, c *chart.Chart) {
	t.Helper()
	var related []string
	for _, ri := range csv.Spec.RelatedImages {
		related = append(related, ri.Image)
	}
	rendered, err := c.Render(chart.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rendered.Objects {
		if strings.Contains(m.Hook, "test") {
			continue
		}
		for _, img := range containerImages(m.Object.Object) {
			if !slices.Contains(related, img) {
				t.Errorf("relatedImages lack %s (%s %s)", img, m.Object.GetKind(), m.Object.GetName())
			}
		}
	}
}

// containerImages finds the image of every container in obj: any map with a
// "name" and a string "image" inside a "containers" or "initContainers" list.
func containerImages(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if k == "containers" || k == "initContainers" {
				list, _ := e.([]any)
				for _, c := range list {
					if cm, ok := c.(map[string]any); ok {
						if img, ok := cm["image"].(string); ok && img != "" {
							out = append(out, img)
						}
					}
				}
				continue
			}
			out = append(out, containerImages(e)...)
		}
	case []any:
		for _, e := range t {
			out = append(out, containerImages(e)...)
		}
	}
	return out
}

func supportedModes(csv *v1alpha1.ClusterServiceVersion) []v1alpha1.InstallModeType {
	var out []v1alpha1.InstallModeType
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			out = append(out, m.Type)
		}
	}
	return out
}

func modeID(m v1alpha1.InstallModeType) string {
	return strings.ToLower(strings.TrimSuffix(string(m), "Namespace"))
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// short keeps namespace names within 63 characters.
func short(name string) string {
	if len(name) > 20 {
		return name[:20]
	}
	return name
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func run(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// Not the jobs of a make that runs this test (make test).
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "rror") {
			return strings.TrimSpace(l)
		}
	}
	return lastLine(s)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// uncheck records an object of a kind the API server does not serve: one
// of unservedKinds, else a test error.
func uncheck(t *testing.T, v *valuesResult, kind string) {
	t.Helper()
	if !slices.Contains(unservedKinds, kind) {
		t.Errorf("values %s: kind %s is not served by the test API server: serve it, or add it to unservedKinds if it is another project's", v.name, kind)
	}
	v.unchecked = appendOnce(v.unchecked, kind)
}
