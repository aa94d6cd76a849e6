package olm_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/catalog/serve"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/logtest"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// apiJourney is the state of TestAPIVersionJourney: a project of the shop
// chart (scaffold/testdata/charts/apiversion), its catalog, served on one
// loopback address across restarts, and the operator of the installed
// release, run in this process as the ServiceAccount OLM made.
type apiJourney struct {
	t          *testing.T
	c          client.Client
	dyn        dynamic.Interface
	ns, other  string
	dir        string // holds the project, its snapshots and the catalog
	project    string
	catalogDir string
	addr       string
	stopServe  func()
	op         *journeyOperator
	began      time.Time
}

const (
	shopPackage = "shop-operator"
	shopGroup   = "charts.apiversion.example.com"
	shopCRD     = "shops." + shopGroup
)

func shopRelease(release string) string {
	return filepath.Join("..", "scaffold", "testdata", "charts", "apiversion", release)
}

func (j *apiJourney) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: shopGroup, Version: version, Resource: "shops"}
}

// step logs how long the journey has run, and what comes.
func (j *apiJourney) step(what string) {
	j.t.Logf("%6.1fs  %s", time.Since(j.began).Seconds(), what)
}

// run runs chartpilot and fails the test on an error.
func (j *apiJourney) run(args ...string) string {
	j.t.Helper()
	out, err := chartpilot(j.t, args...)
	if err != nil {
		j.t.Fatalf("chartpilot %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// snapshot copies the project as it is, for the operator of this release.
func (j *apiJourney) snapshot(version string) string {
	j.t.Helper()
	dst := filepath.Join(j.dir, "shop-operator-v"+version)
	if err := os.CopyFS(dst, os.DirFS(j.project)); err != nil {
		j.t.Fatal(err)
	}
	return dst
}

// restore puts a snapshot back as the project.
func (j *apiJourney) restore(snapshot string) {
	j.t.Helper()
	if err := os.RemoveAll(j.project); err != nil {
		j.t.Fatal(err)
	}
	if err := os.CopyFS(j.project, os.DirFS(snapshot)); err != nil {
		j.t.Fatal(err)
	}
}

// useChart replaces the project's vendored chart with a release of it.
func (j *apiJourney) useChart(release string) {
	j.t.Helper()
	dst := filepath.Join(j.project, "helm-charts", "shop")
	if err := os.RemoveAll(dst); err != nil {
		j.t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(shopRelease(release))); err != nil {
		j.t.Fatal(err)
	}
}

func (j *apiJourney) bundle(version string) {
	j.t.Helper()
	j.run("bundle", "generate", j.project, "--version", version, "--channels", "stable", "--default-channel", "stable",
		"--image", "controller=example.com/shop-operator:v"+version, "--from-catalog", j.catalogDir)
}

// serve (re)starts the registry server on the journey's address: OLM
// reads the catalog again when it reconnects.
func (j *apiJourney) serve() {
	j.t.Helper()
	if j.stopServe != nil {
		j.stopServe()
	}
	addr := j.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var s *serve.Server
	var err error
	// The port of the server just stopped may take a moment to be free.
	for range 50 {
		if s, err = serve.NewServer(context.Background(), serve.Options{Dir: j.catalogDir, Address: addr}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		j.t.Fatal(err)
	}
	j.addr = s.Addr()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	var once sync.Once
	j.stopServe = func() {
		once.Do(func() {
			s.Close()
			if err := <-done; err != nil {
				j.t.Errorf("catalog server: %v", err)
			}
		})
	}
}

// waitCSV waits until the Subscription's CSV is name and Succeeded.
func (j *apiJourney) waitCSV(name string) {
	j.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := olm.Observe(ctx, j.c, shopPackage, j.ns)
		if err != nil {
			return false, err
		}
		last = o.Report().Summary()
		return o.CSV != nil && o.CSV.Name == name && o.Installed(), nil
	})
	if err != nil {
		j.t.Fatalf("CSV %s not Succeeded: %v; last: %s", name, err, last)
	}
}

// journeyOperator is the operator of one release, run in this process.
type journeyOperator struct {
	stop func()
	logs *logtest.Lines
}

// startOperator stops the running operator and runs that of the CSV's
// snapshot, as the ServiceAccount OLM created from the CSV, watching the
// journey's namespace (OwnNamespace): the CSV's RBAC is enforced.
func (j *apiJourney) startOperator(csvName, snapshot string) {
	j.t.Helper()
	if j.op != nil {
		j.op.stop()
	}
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := j.c.Get(context.Background(), client.ObjectKey{Namespace: j.ns, Name: csvName}, csv); err != nil {
		j.t.Fatal(err)
	}
	sa := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	ws, err := watches.Load(filepath.Join(snapshot, "watches.yaml"), watches.Options{})
	if err != nil {
		j.t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + j.ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + j.ns, "system:authenticated"}}
	logs := &logtest.Lines{}
	mgr, err := operator.New(operator.Options{Watches: ws, Config: cfg, Namespaces: []string{j.ns},
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true,
		Log: logs.Logger(0)})
	if err != nil {
		j.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	j.op = &journeyOperator{logs: logs, stop: func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				j.t.Errorf("operator of %s: %v", csvName, err)
			}
		})
	}}
	j.t.Cleanup(j.op.stop)
}

// waitDeployed waits for the release of the CR to run chart.
func (j *apiJourney) waitDeployed(name, chart string) {
	j.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cr, err := j.dyn.Resource(j.gvr("v1beta1")).Namespace(j.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			cr, err = j.dyn.Resource(j.gvr("v1alpha1")).Namespace(j.ns).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			last = err.Error()
			return false, nil
		}
		got, _, _ := unstructured.NestedString(cr.Object, "status", "deployedRelease", "chart")
		conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
		deployed := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			deployed = deployed || (m["type"] == "Deployed" && m["status"] == "True")
		}
		last = fmt.Sprintf("chart %q, conditions %v", got, conds)
		return deployed && got == chart, nil
	})
	if err != nil {
		j.t.Fatalf("Shop %s not Deployed with %s: %v; last: %s", name, chart, err, last)
	}
}

// storedVersions reads the CRD's status.storedVersions.
func (j *apiJourney) storedVersions() []string {
	j.t.Helper()
	crd, err := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), shopCRD, metav1.GetOptions{})
	if err != nil {
		j.t.Fatal(err)
	}
	return crd.Status.StoredVersions
}

// specs reads every Shop of the cluster in version v: namespace/name -> spec.
func (j *apiJourney) specs(v string) map[string]map[string]any {
	j.t.Helper()
	list, err := j.dyn.Resource(j.gvr(v)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		j.t.Fatalf("listing the Shops in %s: %v", v, err)
	}
	out := map[string]map[string]any{}
	for _, item := range list.Items {
		spec, _, _ := unstructured.NestedMap(item.Object, "spec")
		out[item.GetNamespace()+"/"+item.GetName()] = spec
	}
	return out
}

// The journey of issue 27 on the local cluster (OLM v0, a kwok node): a
// Helm operator whose chart's values change across releases.
//
//   - v0.1.0 published and installed; Shops created from its sample, its
//     chart's ci values, and one in a namespace the operator does not watch.
//   - an unsafe v0.2.0 (the chart drops the value legacy) is refused at
//     catalog add, and a new API version cannot carry the removal either.
//   - the fixed v0.2.0 (a value added, and API version v1beta1 as the
//     storage version, v1alpha1 kept) is published; OLM upgrades; every
//     Shop is kept, and its release upgraded by the new operator.
//   - v0.3.0 drops v1alpha1: olm preflight refuses it while storedVersions
//     holds v1alpha1; chartpilot olm migrate rewrites every Shop and trims
//     storedVersions (the operator, watching its namespace only, says to);
//     preflight then accepts it, catalog add publishes it (skipping from
//     v0.2.0 only: a v0.1.0 cluster must migrate through v0.2.0), and OLM,
//     which checks storedVersions too, upgrades: every Shop still reads.
func TestAPIVersionJourney(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	j := &apiJourney{t: t, c: c, dyn: dynamic.NewForConfigOrDie(env.Config), dir: t.TempDir(), began: time.Now()}
	j.ns, j.other = olmtest.Namespace(t, c, "shop"), olmtest.Namespace(t, c, "elsewhere")
	j.project = filepath.Join(j.dir, "shop-operator")
	j.catalogDir = filepath.Join(j.dir, "catalog")

	j.step("v0.1.0: init, bundle, catalog, subscribe")
	j.run("init", j.project, "--chart", shopRelease("v0.1.0"), "--domain", "apiversion.example.com")
	j.run("bundle", "generate", j.project, "--version", "0.1.0", "--channels", "stable", "--default-channel", "stable", "--image", "controller=example.com/shop-operator:v0.1.0")
	j.run("catalog", "init", "--dir", j.catalogDir, "--from-bundle", filepath.Join(j.project, "bundle"))
	j.run("catalog", "add", "--dir", j.catalogDir, filepath.Join(j.project, "bundle"))
	v1 := j.snapshot("0.1.0")
	j.serve()
	t.Cleanup(func() { j.stopServe() })
	if _, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: shopPackage, Namespace: j.ns, CatalogAddress: j.addr, Channel: "stable",
		InstallMode: v1alpha1.InstallModeTypeOwnNamespace}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = olm.Unsubscribe(context.Background(), c, olm.UnsubscribeOptions{Package: shopPackage, Namespace: j.ns,
			DeleteCRs: true, DeleteCRDs: true, ForceRemoveFinalizers: true, Timeout: 20 * time.Second})
	})
	j.waitCSV("shop-operator.v0.1.0")
	j.startOperator("shop-operator.v0.1.0", v1)

	j.step("v0.1.0: Shops from the sample, the ci values, and one elsewhere")
	sample, err := os.ReadFile(filepath.Join(j.project, "config", "samples", shopGroup+"_v1alpha1_shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shops := map[string]*unstructured.Unstructured{}
	sampleCR := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(sample, &sampleCR.Object); err != nil {
		t.Fatal(err)
	}
	sampleCR.SetNamespace(j.ns)
	shops[j.ns+"/shop-sample"] = sampleCR
	shop := func(ns, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": shopGroup + "/v1alpha1", "kind": "Shop",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	}
	shops[j.ns+"/shop-ci-blue"] = shop(j.ns, "shop-ci-blue", map[string]any{"color": "blue", "size": int64(3), "legacy": "kept"})
	shops[j.other+"/shop-elsewhere"] = shop(j.other, "shop-elsewhere", map[string]any{"color": "green", "size": int64(5), "legacy": "old"})
	for id, cr := range shops {
		if _, err := j.dyn.Resource(j.gvr("v1alpha1")).Namespace(cr.GetNamespace()).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
	}
	j.waitDeployed("shop-sample", "shop-0.1.0")
	j.waitDeployed("shop-ci-blue", "shop-0.1.0")
	before := j.specs("v1alpha1")
	if len(before) != 3 {
		t.Fatalf("%d Shops, want 3: %v", len(before), before)
	}

	j.step("unsafe v0.2.0: the chart drops the value legacy")
	j.useChart("v0.2.0-field-removed")
	j.run("generate", "--project-dir", j.project)
	j.bundle("0.2.0")
	catalogBefore := dirFiles(t, j.catalogDir)
	out, err := chartpilot(t, "catalog", "add", "--dir", j.catalogDir, filepath.Join(j.project, "bundle"))
	if err == nil || !strings.Contains(err.Error(), "unsafe CRD changes") || !strings.Contains(err.Error(), shopCRD+" v1alpha1 spec.legacy: existingFieldRemoval") {
		t.Fatalf("catalog add of the unsafe v0.2.0: %v\n%s", err, out)
	}
	t.Logf("refused at catalog add:\n%v", err)
	if !maps.Equal(catalogBefore, dirFiles(t, j.catalogDir)) {
		t.Error("the refused catalog add changed the catalog")
	}
	j.restore(v1)
	j.useChart("v0.2.0-field-removed")
	out, err = chartpilot(t, "create", "api", "--project-dir", j.project, "--version", "v1beta1", "--kind", "Shop")
	if err == nil || !strings.Contains(err.Error(), "v1alpha1 -> v1beta1 spec.legacy: existingFieldRemoval") {
		t.Fatalf("create api --version v1beta1 dropping legacy: %v\n%s", err, out)
	}

	j.step("fixed v0.2.0: a value added, API version v1beta1 as the storage version")
	j.restore(v1)
	j.useChart("v0.2.0-field-added")
	j.run("create", "api", "--project-dir", j.project, "--version", "v1beta1", "--kind", "Shop")
	j.bundle("0.2.0")
	j.run("catalog", "add", "--dir", j.catalogDir, filepath.Join(j.project, "bundle"))
	v2 := j.snapshot("0.2.0")
	published := time.Now()
	j.serve()
	j.waitCSV("shop-operator.v0.2.0")
	t.Logf("OLM upgraded to v0.2.0 %s after the publish", time.Since(published).Round(100*time.Millisecond))
	if got := j.storedVersions(); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Fatalf("storedVersions after the upgrade to v0.2.0: %v", got)
	}
	if got := j.specs("v1beta1"); !sameSpecs(before, got) {
		t.Fatalf("the Shops read in v1beta1 after the upgrade: %v, want %v", got, before)
	}

	j.step("v0.3.0 prepared: v1alpha1 dropped from PROJECT; preflight refuses it while storedVersions holds v1alpha1")
	dropVersion(t, j.project, "v1alpha1")
	j.run("generate", "--project-dir", j.project)
	j.bundle("0.3.0")
	v3 := j.snapshot("0.3.0")
	out, err = chartpilot(t, "olm", "preflight", filepath.Join(v3, "bundle"))
	if err == nil || !strings.Contains(out, "storedVersionRemoval: stored version(s) v1alpha1 removed") || !strings.Contains(out, "chartpilot olm migrate") {
		t.Fatalf("olm preflight of v0.3.0 before the migration: %v\n%s", err, out)
	}

	j.step("the v0.2.0 operator upgrades the releases, and says to migrate")
	j.startOperator("shop-operator.v0.2.0", v2)
	j.waitDeployed("shop-sample", "shop-0.2.0")
	j.waitDeployed("shop-ci-blue", "shop-0.2.0")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return j.op.logs.Find("run `chartpilot olm migrate "+shopCRD+"` as the cluster admin") != "", nil
	})
	if err != nil {
		t.Error("the v0.2.0 operator, watching its namespace only, did not say to run chartpilot olm migrate")
	}

	j.step("chartpilot olm migrate: every Shop rewritten in v1beta1, storedVersions trimmed")
	out = j.run("olm", "migrate", "--package", shopPackage, "-n", j.ns)
	t.Logf("olm migrate:\n%s", out)
	if !strings.Contains(out, shopCRD+": 3 CR(s) rewritten in v1beta1; storedVersions [v1alpha1 v1beta1] -> [v1beta1]") {
		t.Errorf("olm migrate did not rewrite the 3 Shops:\n%s", out)
	}
	if got := j.storedVersions(); !slices.Equal(got, []string{"v1beta1"}) {
		t.Fatalf("storedVersions after olm migrate: %v", got)
	}

	j.step("v0.3.0: preflight passes, catalog add accepts it, OLM upgrades")
	if out, err := chartpilot(t, "olm", "preflight", filepath.Join(v3, "bundle")); err != nil {
		t.Fatalf("olm preflight of v0.3.0 after the migration: %v\n%s", err, out)
	}
	// A cluster still on v0.1.0 stores its Shops in v1alpha1 alone: it
	// must go through v0.2.0 and a migration, so v0.3.0 skips from v0.2.0
	// only.
	out = j.run("catalog", "add", "--dir", j.catalogDir, filepath.Join(v3, "bundle"))
	if !strings.Contains(out, "replaces shop-operator.v0.2.0, skipRange '>=0.2.0 <0.3.0'") || !strings.Contains(out, "shop-operator.v0.3.0 does not skip from shop-operator.v0.1.0") {
		t.Errorf("catalog add of v0.3.0:\n%s", out)
	}
	t.Logf("catalog add of v0.3.0:\n%s", out)
	published = time.Now()
	j.serve()
	j.waitCSV("shop-operator.v0.3.0")
	t.Logf("OLM upgraded to v0.3.0 %s after the publish", time.Since(published).Round(100*time.Millisecond))
	crd, err := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, shopCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1beta1" {
		t.Errorf("the CRD after v0.3.0 has versions %v, want v1beta1 alone", crd.Spec.Versions)
	}
	// Every Shop, the one no operator watches included, reads in v1beta1.
	var after map[string]map[string]any
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := j.dyn.Resource(j.gvr("v1beta1")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		after = map[string]map[string]any{}
		for _, item := range list.Items {
			spec, _, _ := unstructured.NestedMap(item.Object, "spec")
			after[item.GetNamespace()+"/"+item.GetName()] = spec
		}
		return sameSpecs(before, after), nil
	})
	if err != nil {
		t.Fatalf("the Shops after v0.3.0: %v, want %v", after, before)
	}
	j.startOperator("shop-operator.v0.3.0", v3)
	j.waitDeployed("shop-sample", "shop-0.2.0")
	j.step("done")
}

// sameSpecs says whether every CR of before is in after with every field
// of its spec unchanged (fields after adds, defaults, are allowed).
func sameSpecs(before, after map[string]map[string]any) bool {
	if len(before) != len(after) {
		return false
	}
	for id, spec := range before {
		got, ok := after[id]
		if !ok {
			return false
		}
		for k, v := range spec {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				return false
			}
		}
	}
	return true
}

// dropVersion removes a version of the project's kind from its PROJECT, as
// an author does before chartpilot generate drops it from the CRDs.
func dropVersion(t *testing.T, project, version string) {
	t.Helper()
	path := filepath.Join(project, "PROJECT")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	res, _ := p["resources"].([]any)
	p["resources"] = slices.DeleteFunc(res, func(r any) bool {
		m, _ := r.(map[string]any)
		return m["version"] == version
	})
	out, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirFiles reads every file under dir, by relative path.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[path] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
