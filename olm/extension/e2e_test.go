package extension_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cmd/cli"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

var env *clustertest.Env

func TestMain(m *testing.M) {
	os.Exit(clustertest.MainWith(m, &env, clustertest.Options{OLM: cluster.OLMv1}))
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	clustertest.SkipIfShort(t)
	c, err := olm.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// derivedRules are the installer's rules in these tests: the least
// privilege derived from the bundle (extension.DerivedRules), so that
// operator-controller installing and upgrading with them proves they
// suffice. Each request is recorded.
func derivedRules(requests *[]extension.InstallerRequest) extension.InstallerRulesFunc {
	return func(ctx context.Context, req extension.InstallerRequest) (extension.InstallerRules, error) {
		if _, err := os.Stat(filepath.Join(req.Bundle.Dir, "manifests")); err != nil {
			return extension.InstallerRules{}, fmt.Errorf("the bundle is not unpacked: %w", err)
		}
		if requests != nil {
			*requests = append(*requests, req)
		}
		return extension.DerivedRules(ctx, req)
	}
}

// A catalog image on a loopback registry becomes Serving, a
// ClusterExtension installs v0.1.0 from it, a new catalog image upgrades
// it to v0.2.0 in place, an upgrade whose CRD breaks the old one is
// refused and named, and uninstall leaves nothing of it.
func TestInstallUpgradeUninstall(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	reg := olmtest.Registry(t)
	pkg := "v1widget"
	v1 := olmtest.Bundle{Package: pkg, Version: "0.1.0"}
	v2 := olmtest.Bundle{Package: pkg, Version: "0.2.0"}
	v3 := olmtest.Bundle{Package: pkg, Version: "0.3.0"}
	d1, r1 := olmtest.PushBundle(t, reg, v1, nil)
	d2, r2 := olmtest.PushBundle(t, reg, v2, nil)
	// v0.3.0 makes the CRD cluster-scoped: OLM v1's CRD upgrade safety
	// check refuses to change a CRD's scope.
	d3, r3 := olmtest.PushBundle(t, reg, v3, func(dir string) {
		p := filepath.Join(dir, "manifests", "crd.yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), "scope: Namespaced", "scope: Cluster", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	cat1 := olmtest.PushCatalog(t, reg+"/"+pkg+"-catalog:1", false, olmtest.ImageBundle{Dir: d1, Ref: r1})
	cat2 := olmtest.PushCatalog(t, reg+"/"+pkg+"-catalog:2", false, olmtest.ImageBundle{Dir: d1, Ref: r1}, olmtest.ImageBundle{Dir: d2, Ref: r2})
	cat3 := olmtest.PushCatalog(t, reg+"/"+pkg+"-catalog:3", true, olmtest.ImageBundle{Dir: d1, Ref: r1}, olmtest.ImageBundle{Dir: d2, Ref: r2}, olmtest.ImageBundle{Dir: d3, Ref: r3})

	// The cluster's OLM v1 (v1.11.0, experimental CRDs) installs as its own
	// cluster-admin ServiceAccount and takes spec.config: read from its CRD.
	if f, err := extension.ReadFeatures(ctx, c); err != nil || f != (extension.Features{Config: true}) {
		t.Fatalf("ReadFeatures = %+v, %v; want config and no installer", f, err)
	}
	ns := fmt.Sprintf("v1widget-%d", time.Now().UnixNano()%100000)
	var requests []extension.InstallerRequest
	began := time.Now()
	res, err := extension.Install(ctx, c, extension.InstallOptions{Package: pkg, Namespace: ns, CatalogImage: cat1, InstallerRules: derivedRules(&requests)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uninstallQuietly(c, pkg) })
	if got := kinds(res.Objects); got != "Namespace ClusterCatalog ClusterExtension" {
		t.Errorf("install applied %s", got)
	}
	if len(requests) != 0 || !slices.Contains(res.Notes, extension.NoInstallerNote) || res.Bundle == nil || res.Bundle.Version != "0.1.0" {
		t.Errorf("install derived installer rules for %+v, notes %q, bundle %+v: want none, the note saying why, v0.1.0", requests, res.Notes, res.Bundle)
	}
	r, err := extension.Wait(ctx, c, pkg, extension.WaitOptions{Timeout: 3 * time.Minute, Progress: func(r *extension.Report) { t.Log(r.Summary()) }})
	if err != nil {
		t.Fatalf("%v\n%s", err, reportText(r))
	}
	installTime := time.Since(began)
	if r.Bundle.Version != "0.1.0" || len(r.Catalogs) != 1 || !r.Catalogs[0].Serving {
		t.Fatalf("installed %+v, catalogs %+v", r.Bundle, r.Catalogs)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1.Deployment()}, &dep); err != nil {
		t.Fatalf("the bundle's Deployment: %v", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: v1.CRDName()}, &crd); err != nil {
		t.Fatalf("the bundle's CRD: %v", err)
	}
	doctorFindsOperator(t, pkg, v1)
	driftRepaired(t, c, &dep)

	// Running install again changes nothing.
	again, err := extension.Install(ctx, c, extension.InstallOptions{Package: pkg, Namespace: ns, CatalogImage: cat1, InstallerRules: derivedRules(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range again.Objects {
		if o.Action != olm.ActionUnchanged {
			t.Errorf("install again: %s", o)
		}
	}

	// An upgrade to a range the new catalog does not have changes nothing.
	tooFar := ">=9.0.0"
	if _, err := extension.Upgrade(ctx, c, extension.UpgradeOptions{Name: pkg, CatalogImage: cat2, Version: &tooFar}); !errors.Is(err, extension.ErrNoBundleMatches) {
		t.Fatalf("upgrade to %s: %v, want ErrNoBundleMatches", tooFar, err)
	}
	cat := &unstructured.Unstructured{}
	cat.SetGroupVersionKind(extension.GroupVersion.WithKind(extension.CatalogKind))
	if err := c.Get(ctx, client.ObjectKey{Name: pkg + "-catalog"}, cat); err != nil {
		t.Fatal(err)
	}
	if ref, _, _ := unstructured.NestedString(cat.Object, "spec", "source", "image", "ref"); ref != cat1 {
		t.Errorf("a refused upgrade changed the catalog's image to %s", ref)
	}

	// Upgrade by a new catalog image.
	began = time.Now()
	up, err := extension.Upgrade(ctx, c, extension.UpgradeOptions{Name: pkg, CatalogImage: cat2, InstallerRules: derivedRules(&requests)})
	if err != nil {
		t.Fatal(err)
	}
	if up.To == nil || up.To.Version != "0.2.0" || up.From == nil || up.From.Version != "0.1.0" {
		t.Fatalf("upgrade from %+v to %+v (%s)", up.From, up.To, up.Note)
	}
	if len(requests) != 0 {
		t.Errorf("the upgrade derived installer rules for %+v: there is no installer", requests)
	}
	r, err = extension.Wait(ctx, c, pkg, extension.WaitOptions{Timeout: 3 * time.Minute, Version: "0.2.0", Progress: func(r *extension.Report) { t.Log(r.Summary()) }})
	if err != nil {
		t.Fatalf("%v\n%s", err, reportText(r))
	}
	upgradeTime := time.Since(began)
	var dep2 appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1.Deployment()}, &dep2); err != nil {
		t.Fatal(err)
	}
	if dep2.UID != dep.UID || dep2.Spec.Template.Spec.Containers[0].Image != "example.com/"+pkg+":v0.2.0" {
		t.Errorf("the Deployment after the upgrade: uid %s (was %s), image %s", dep2.UID, dep.UID, dep2.Spec.Template.Spec.Containers[0].Image)
	}

	// What refuses v0.3.0 is the CRD upgrade safety check, named with its
	// fix.
	if _, err := extension.Upgrade(ctx, c, extension.UpgradeOptions{Name: pkg, CatalogImage: cat3, InstallerRules: derivedRules(&requests)}); err != nil {
		t.Fatal(err)
	}
	p := waitProblem(t, c, pkg, extension.ProblemUpgradeUnsafe)
	if !strings.Contains(p.Message, v1.CRDName()) || !strings.Contains(p.Fix, "--crd-upgrade-safety-enforcement None") {
		t.Errorf("unsafe upgrade problem = %+v", p)
	}
	if ch := doctorNames(t, extension.ProblemUpgradeUnsafe, "--extension", pkg); ch.Fix != p.Fix {
		t.Errorf("doctor's unsafe upgrade check = %+v, want the fix %q", ch, p.Fix)
	}

	began = time.Now()
	un, err := extension.Uninstall(ctx, c, extension.UninstallOptions{Name: pkg, Config: env.Config, Timeout: 2 * time.Minute, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	uninstallTime := time.Since(began)
	if un.Collected == 0 {
		t.Errorf("uninstall saw nothing of the bundle collected")
	}
	assertNothingLeft(t, c, pkg, ns, v1)
	t.Logf("OLM v1 timings: ClusterExtension created to Installed %s (catalog unpacked and served on the way), upgrade by a new catalog image %s, uninstall to nothing left %s (%d objects collected)",
		installTime.Round(10*time.Millisecond), upgradeTime.Round(10*time.Millisecond), uninstallTime.Round(10*time.Millisecond), un.Collected)
}

// driftRepaired deletes a Deployment operator-controller installed and
// waits for it to be back: operator-controller watches what it installed
// (tools/olmv1/boxcutter/managedcache) and puts it back.
func driftRepaired(t *testing.T, c client.Client, dep *appsv1.Deployment) {
	t.Helper()
	ctx := t.Context()
	if err := c.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		var now appsv1.Deployment
		err := c.Get(ctx, client.ObjectKeyFromObject(dep), &now)
		if err == nil && now.UID != dep.UID {
			t.Logf("the deleted Deployment %s was back in %s", dep.Name, time.Since(began).Round(10*time.Millisecond))
			*dep = now
			return
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if time.Since(began) > time.Minute {
			t.Fatalf("the deleted Deployment %s was not put back within a minute", dep.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// doctorFindsOperator checks that doctor --extension passes the installed
// ClusterExtension and goes on to the operator it installed: its CRD and
// Deployment.
func doctorFindsOperator(t *testing.T, name string, b olmtest.Bundle) {
	t.Helper()
	rep := doctorReport(t, "--extension", name)
	for _, want := range []doctor.Check{
		{Check: doctor.CheckClusterExtension, Severity: doctor.Pass, Object: "clusterextension/" + name},
		{Check: doctor.CheckInstaller, Severity: doctor.Pass},
		{Check: doctor.CheckCRD, Severity: doctor.Pass, Object: "customresourcedefinition/" + b.CRDName()},
		{Check: doctor.CheckDeployment, Object: "deployment/" + b.Deployment()},
	} {
		if !slices.ContainsFunc(rep.Checks, func(c doctor.Check) bool {
			return c.Check == want.Check && (want.Severity == "" || c.Severity == want.Severity) && (want.Object == "" || c.Object == want.Object)
		}) {
			t.Errorf("doctor --extension %s has no %s check %s %s", name, want.Severity, want.Check, want.Object)
		}
	}
}

// assertNothingLeft checks that the cluster holds nothing of the extension:
// the bundle's objects, the release records, the installer's RBAC, the
// catalog and the namespace.
func assertNothingLeft(t *testing.T, c client.Client, name, ns string, b olmtest.Bundle) {
	t.Helper()
	ctx := t.Context()
	gone := []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: b.CRDName()}},
		{&rbacv1.ClusterRole{}, client.ObjectKey{Name: b.EditorRole()}},
		{&rbacv1.ClusterRole{}, client.ObjectKey{Name: name + "-installer"}},
		{&rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: name + "-installer"}},
		{&corev1.Namespace{}, client.ObjectKey{Name: ns}},
	}
	for _, g := range gone {
		if err := c.Get(ctx, g.key, g.obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s is left (err %v)", g.obj, g.key, err)
		}
	}
	for _, kind := range []string{extension.ExtensionKind, extension.CatalogKind} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(extension.GroupVersion.WithKind(kind))
		key := client.ObjectKey{Name: name}
		if kind == extension.CatalogKind {
			key.Name = name + "-catalog"
		}
		if err := c.Get(ctx, key, u); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s is left (err %v)", kind, key.Name, err)
		}
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(cluster.OLMv1Namespace), client.MatchingLabels{"owner": "operator-controller"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Labels["name"] == name || strings.HasPrefix(s.Name, "sh.helm.release.v1."+name) {
			t.Errorf("release record %s is left", s.Name)
		}
	}
	var crbs rbacv1.ClusterRoleBindingList
	if err := c.List(ctx, &crbs, client.MatchingLabels{extension.OwnerNameLabel: name}); err != nil {
		t.Fatal(err)
	}
	if len(crbs.Items) > 0 {
		t.Errorf("%d ClusterRoleBindings of the bundle are left", len(crbs.Items))
	}
}

func kinds(objs []olm.ObjectResult) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind)
	}
	return strings.Join(out, " ")
}

func reportText(r *extension.Report) string {
	if r == nil {
		return "(no report)"
	}
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}

// waitProblem waits until the extension's report names a problem of kind.
func waitProblem(t *testing.T, c client.Client, name string, kind extension.ProblemKind) extension.Problem {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last *extension.Report
	for time.Now().Before(deadline) {
		o, err := extension.Observe(t.Context(), c, name)
		if err != nil {
			t.Fatal(err)
		}
		last = o.Report()
		if i := slices.IndexFunc(last.Problems, func(p extension.Problem) bool { return p.Kind == kind }); i >= 0 {
			return last.Problems[i]
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("no %s problem after 2m:\n%s", kind, reportText(last))
	return extension.Problem{}
}

// installAll installs each of opts and returns their names, then the
// caller checks each: operator-controller works on them side by side,
// which parallel subtests, as many at once as GOMAXPROCS, would not let
// it do. When the test ends their ClusterExtensions and ClusterCatalogs
// are deleted, so that OLM v1 stops retrying them, without waiting for the
// namespaces to terminate: the cluster goes with the package's tests, and
// TestInstallUpgradeUninstall proves that uninstall leaves nothing.
func installAll(t *testing.T, c client.Client, opts []extension.InstallOptions) []string {
	t.Helper()
	var created []client.Object
	t.Cleanup(func() {
		for _, o := range created {
			if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: deleting %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
	})
	// Install is mostly waiting (pulling the catalog and bundle images,
	// the API server): a few at once.
	results := make([]*extension.InstallResult, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, o := range opts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = extension.Install(t.Context(), c, o)
		})
	}
	wg.Wait()
	names := make([]string, len(opts))
	for i, o := range opts {
		if res := results[i]; res != nil {
			for _, r := range res.Objects {
				if r.Kind == extension.ExtensionKind || r.Kind == extension.CatalogKind {
					u := &unstructured.Unstructured{}
					u.SetGroupVersionKind(extension.GroupVersion.WithKind(r.Kind))
					u.SetName(r.Name)
					created = append(created, u)
				}
			}
		}
		if errs[i] != nil {
			t.Fatalf("installing %s: %v", o.Package, errs[i])
		}
		names[i] = cmp.Or(o.Name, o.Package)
	}
	return names
}

func uninstallQuietly(c client.Client, name string) {
	_, err := extension.Uninstall(context.Background(), c, extension.UninstallOptions{Name: name, Config: env.Config, Timeout: time.Minute})
	if err != nil && !errors.Is(err, extension.ErrNotInstalled) {
		fmt.Fprintln(os.Stderr, "cleanup:", err)
	}
}

// testWriter logs each write in the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Each way an install goes wrong is named, with its fix, by olm v1 status
// and by doctor (--extension, and --package finding the ClusterExtension),
// while olm status (OLM v0) points at olm v1 status.
func TestBadCasesNamed(t *testing.T) {
	c := newClient(t)
	reg := olmtest.Registry(t)
	good := olmtest.Bundle{Package: "v1good", Version: "0.1.0"}
	hooked := olmtest.Bundle{Package: "v1webhook", Version: "0.1.0"}
	dg, rg := olmtest.PushBundle(t, reg, good, nil)
	dw, rw := olmtest.PushBundle(t, reg, hooked, func(dir string) { addWebhook(t, dir, hooked) })
	goodCatalog := olmtest.PushCatalog(t, reg+"/v1good-catalog:1", false, olmtest.ImageBundle{Dir: dg, Ref: rg})
	webhookCatalog := olmtest.PushCatalog(t, reg+"/v1webhook-catalog:1", false, olmtest.ImageBundle{Dir: dw, Ref: rw})

	tests := []struct {
		name string
		opts extension.InstallOptions
		want extension.ProblemKind
		// in are substrings of the problem's message and fix.
		in []string
		// check is the doctor check that names it.
		check string
	}{
		{name: "unknown package", opts: extension.InstallOptions{Package: "v1nosuch", CatalogImage: goodCatalog},
			want: extension.ProblemPackageNotFound, in: []string{`no bundles found for package "v1nosuch"`, "check the name"}, check: doctor.CheckClusterExtension},
		{name: "version range nothing satisfies", opts: extension.InstallOptions{Package: "v1good", Name: "v1good-range", CatalogImage: goodCatalog, Version: ">=2.0.0"},
			want: extension.ProblemNoVersionMatches, in: []string{`matching version ">=2.0.0"`, `version range ">=2.0.0"`}, check: doctor.CheckClusterExtension},
		{name: "catalog image not pullable", opts: extension.InstallOptions{Package: "v1good", Name: "v1good-nopull", CatalogImage: reg + "/v1nosuch-catalog:1"},
			want: extension.ProblemCatalogUnpullable, in: []string{"catalogd cannot pull the image " + reg + "/v1nosuch-catalog:1", "push the image"}, check: doctor.CheckClusterCatalog},
		{name: "bundle with a webhook on a cluster without cert-manager", opts: extension.InstallOptions{Package: "v1webhook", CatalogImage: webhookCatalog},
			want: extension.ProblemBundleUnsupported, in: []string{"webhookDefinitions are not supported", "cert-manager", "drop spec.webhookdefinitions"}, check: doctor.CheckClusterExtension},
	}
	all := make([]extension.InstallOptions, len(tests))
	for i, tt := range tests {
		all[i] = tt.opts
		all[i].Namespace = fmt.Sprintf("%s-%d", tt.opts.Package, time.Now().UnixNano()%100000)
		// Features that need no bundle resolved: install would refuse an
		// unknown package or range itself, and these are the states
		// operator-controller is to report.
		all[i].Features = &extension.Features{}
	}
	names := installAll(t, c, all)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, name := all[i], names[i]
			p := waitProblem(t, c, name, tt.want)
			for _, s := range tt.in {
				if !strings.Contains(p.Message+" "+p.Fix, s) {
					t.Errorf("problem %s lacks %q:\n%s\nfix: %s", p.Kind, s, p.Message, p.Fix)
				}
			}
			named := time.Now()
			// olm v1 status on the command line.
			out, _, err := chartpilot(t, "olm", "v1", "status", name)
			if err == nil || !strings.Contains(out, "problem "+string(tt.want)+":") || !strings.Contains(out, "fix: "+p.Fix) {
				t.Errorf("olm v1 status %s (err %v) does not name %s with its fix:\n%s", name, err, tt.want, out)
			}
			// doctor, by the ClusterExtension and by the package.
			for _, args := range [][]string{{"--extension", name}, {"--package", opts.Package, "-n", opts.Namespace}} {
				ch := doctorNames(t, tt.want, args...)
				if ch.Check != tt.check || ch.Severity != doctor.Fail || ch.Object != "clusterextension/"+name {
					t.Errorf("doctor %s: check %+v, want a failed %q check of clusterextension/%s", strings.Join(args, " "), ch, tt.check, name)
				}
				for _, s := range tt.in {
					if !strings.Contains(ch.Message+" "+ch.Fix, s) {
						t.Errorf("doctor %s: check lacks %q:\n%s\nfix: %s", strings.Join(args, " "), s, ch.Message, ch.Fix)
					}
				}
			}
			// olm status of OLM v0 points at OLM v1's.
			out, _, err = chartpilot(t, "olm", "status", opts.Package, "-n", opts.Namespace)
			if err == nil || !strings.Contains(out, "chartpilot olm v1 status "+name) {
				t.Errorf("olm status %s -n %s (err %v) does not point at olm v1 status %s:\n%s", opts.Package, opts.Namespace, err, name, out)
			}
			t.Logf("named by olm v1 status, doctor and olm status in %s", time.Since(named).Round(time.Millisecond))
		})
	}
}

// addWebhook gives the bundle's CSV a validating webhook, which OLM v1
// v1.2 does not install.
func addWebhook(t *testing.T, dir string, b olmtest.Bundle) {
	t.Helper()
	p := filepath.Join(dir, "manifests", b.Package+".clusterserviceversion.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	hook := fmt.Sprintf("  webhookdefinitions:\n  - {type: ValidatingAdmissionWebhook, generateName: vwidget.%[1]s, deploymentName: %[2]s, containerPort: 9443, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, webhookPath: /validate, rules: [{operations: [CREATE], apiGroups: [%[1]s], apiVersions: [v1], resources: [widgets]}]}\n  installModes:", b.Group(), b.Deployment())
	csv := strings.Replace(string(data), "  installModes:", hook, 1)
	if csv == string(data) {
		t.Fatalf("%s has no installModes", p)
	}
	if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chartpilot runs the command line against the test cluster and returns
// what it wrote to stdout and stderr.
func chartpilot(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := cli.NewRootCommand(streams)
	// The kubectl flags follow the command's name.
	cmd.SetArgs(append(args, "--kubeconfig", env.Kubeconfig))
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// doctorNames runs chartpilot doctor with args until it fails a check
// whose message names the problem kind, and returns that check.
// doctorReport runs doctor -o json with args and returns its report.
func doctorReport(t *testing.T, args ...string) doctor.Report {
	t.Helper()
	out, errOut, err := chartpilot(t, append([]string{"doctor", "-o", "json"}, args...)...)
	var rep doctor.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("doctor %s: %v (err %v):\n%s%s", strings.Join(args, " "), jerr, err, out, errOut)
	}
	t.Logf("doctor %s (err %v): %+v", strings.Join(args, " "), err, rep.Checks)
	return rep
}

func doctorNames(t *testing.T, kind extension.ProblemKind, args ...string) doctor.Check {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var out, errOut string
	for time.Now().Before(deadline) {
		var err error
		out, errOut, err = chartpilot(t, append([]string{"doctor", "-o", "json"}, args...)...)
		var rep doctor.Report
		if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
			t.Fatalf("doctor %s: %v (err %v):\n%s%s", strings.Join(args, " "), jerr, err, out, errOut)
		}
		for _, ch := range rep.Checks {
			if strings.HasPrefix(ch.Message, string(kind)+": ") {
				if err == nil {
					t.Errorf("doctor %s exits 0 with a failed check", strings.Join(args, " "))
				}
				return ch
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("doctor %s names no %s after 1m:\n%s%s", strings.Join(args, " "), kind, out, errOut)
	return doctor.Check{}
}
