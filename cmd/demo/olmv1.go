package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/olm/extension"
)

// The journey through OLM v1: the catalog image of v0.1.0 served by a
// ClusterCatalog, a ClusterExtension installing it (before OLM v1.11, as an
// installer ServiceAccount whose RBAC is derived from the bundle), the v0.2.0 catalog
// image upgrading it, and uninstall leaving nothing. It takes the images
// the journey through images builds: after OLM v0's journey, the same.

// v1Steps are OLM v1's journey with v0.1.0's and v0.2.0's images built
// (by OLM v0's journey in the same cluster).
func (d *demo) v1Steps() []step {
	return []step{
		{"OLM v1: chartpilot olm v1 install with the catalog image v0.1.0 (ClusterCatalog, ClusterExtension; an installer ServiceAccount with RBAC derived from the bundle where OLM v1 uses one)", d.installV1},
		{"OLM v1: the operator runs in its pod, from the image built", d.operatorPod("0.1.0")},
		{"OLM v1: create a Hello; wait for Deployed and Ready, its pods answering their readiness probe", d.createCRInPods},
		{"OLM v1 upgrades to v0.2.0: chartpilot olm v1 upgrade --catalog-image (the catalog image v0.2.0)", d.upgradeV1},
		{"OLM v1: the operator pod rolls to v0.2.0 and upgrades the release; nothing is lost", d.upgradeInPod},
		{"OLM v1: chartpilot olm v1 uninstall: no CRD, installer RBAC, catalog or namespace left", d.uninstallV1},
	}
}

// v1BuildSteps are OLM v1's journey alone: it builds v0.1.0's images and
// makes v0.2.0 with the steps of OLM v0's journey, and publishes v0.2.0
// once v0.1.0 runs.
func (d *demo) v1BuildSteps() []step {
	return d.alone(d.buildSteps(),
		step{makeV2Title + ": chart change, generate, operator image, bundle, scorecard with upgrade test", d.makeV2(d.dockerBuild("0.2.0"))},
		step{publishV2Title + ": make bundle-build bundle-push catalog-build catalog-push", d.publishV2(d.publishImages("0.2.0"))},
		d.v1Steps())
}

// The steps of v0.2.0 in OLM v1's journey alone. v0.2.0 is made (its
// scorecard run) before OLM v1 installs v0.1.0, whose operator watches all
// namespaces (OLM v1 installs for AllNamespaces): it would reconcile the
// scorecard's custom resources too.
const (
	makeV2Title    = "Make v0.2.0 before OLM v1 installs v0.1.0 (an operator of all namespaces would reconcile the scorecard's resources too)"
	publishV2Title = "Publish v0.2.0"
)

// alone orders OLM v1's journey alone: build (v0.1.0 published), v0.2.0
// made, OLM v1 installs v0.1.0 and its custom resource is created (the
// first three of v1), v0.2.0 published, then the rest of v1.
func (d *demo) alone(build []step, makeV2, publishV2 step, v1 []step) []step {
	steps := append(append(build, makeV2), v1[:3]...)
	return append(append(steps, publishV2), v1[3:]...)
}

// makeV2 makes v0.2.0, with beforeBundle as makeRelease.
func (d *demo) makeV2(beforeBundle func(context.Context) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) { return d.makeRelease(ctx, beforeBundle) }
}

// publishV2 publishes v0.2.0 with publish and notes when.
func (d *demo) publishV2(publish func(context.Context) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		detail, err := publish(ctx)
		d.published = time.Now()
		return detail, err
	}
}

// beginV1 starts recording into OLM v1's summary.
func (d *demo) beginV1() {
	if d.v1 != nil {
		return
	}
	d.v1 = &OLMv1Summary{}
	d.sum.OLMv1 = d.v1
	d.v1First = len(d.r.steps)
	// OLM v0's journey published v0.2.0 before: OLM v1's upgrade measures
	// from when it takes the catalog image.
	d.published = time.Time{}
}

// installV1 installs v0.1.0 as a user would: chartpilot olm v1 install,
// which derives the installer's rules from the bundle the catalog image
// resolves to, then waits for the ClusterExtension to be Installed.
func (d *demo) installV1(ctx context.Context) (string, error) {
	d.beginV1()
	if _, err := d.chartpilot(ctx, "olm", "v1", "install", pkg, "-n", d.opts.Namespace, "--catalog-image", d.catalogImg("0.1.0")); err != nil {
		return "", err
	}
	// The ClusterExtension is the last object install applies.
	began := time.Now()
	if err := d.waitExtension(ctx, "0.1.0"); err != nil {
		return "", err
	}
	d.v1.ExtensionToInstalled = time.Since(began).Round(10 * time.Millisecond)
	rules, err := d.installerRules(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("ClusterExtension %s Installed %s %s after its creation; %s",
		pkg, pkg+".v0.1.0", d.v1.ExtensionToInstalled, rules), nil
}

// waitExtension waits for the ClusterExtension to be Installed at version.
func (d *demo) waitExtension(ctx context.Context, version string) error {
	r, err := extension.Wait(ctx, d.olm, pkg, extension.WaitOptions{Timeout: d.opts.Timeout, Version: version})
	if err != nil && r != nil {
		var b strings.Builder
		_ = r.WriteText(&b)
		err = fmt.Errorf("%w\n%s", err, b.String())
	}
	return err
}

// installerRules counts the rules of the installer's ClusterRole and Role,
// where the cluster's OLM v1 installs as an installer.
func (d *demo) installerRules(ctx context.Context) (string, error) {
	f, err := extension.ReadFeatures(ctx, d.olm)
	if err != nil {
		return "", err
	}
	if !f.InstallerServiceAccount {
		return "installer none: " + extension.NoInstallerNote, nil
	}
	name := extension.InstallerName(pkg)
	var cr rbacv1.ClusterRole
	if err := d.olm.Get(ctx, client.ObjectKey{Name: name}, &cr); err != nil {
		return "", fmt.Errorf("the installer's ClusterRole: %w", err)
	}
	// The Role exists when the bundle has namespaced objects.
	var role rbacv1.Role
	if err := d.olm.Get(ctx, client.ObjectKey{Namespace: d.opts.Namespace, Name: name}, &role); err != nil && !isNotFound(err) {
		return "", fmt.Errorf("the installer's Role: %w", err)
	}
	return fmt.Sprintf("installer %s: %d cluster rules, %d in %s, derived from the bundle", name, len(cr.Rules), len(role.Rules), d.opts.Namespace), nil
}

// upgradeV1 points the extension's ClusterCatalog at the catalog image of
// v0.2.0 with chartpilot olm v1 upgrade, as a user publishing versioned
// catalog tags would: catalogd's poll sees a new digest of the same tag
// only, once per interval (a minute at least).
func (d *demo) upgradeV1(ctx context.Context) (string, error) {
	if d.published.IsZero() {
		d.published = time.Now()
	}
	if _, err := d.chartpilot(ctx, "olm", "v1", "upgrade", pkg, "--catalog-image", d.catalogImg("0.2.0")); err != nil {
		return "", err
	}
	if err := d.waitExtension(ctx, "0.2.0"); err != nil {
		return "", err
	}
	rules, err := d.installerRules(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.v0.2.0 Installed %s after the catalog image; %s",
		pkg, time.Since(d.published).Round(10*time.Millisecond), rules), nil
}

// uninstallV1 deletes the Hello while its operator runs, then runs
// chartpilot olm v1 uninstall and checks that nothing of the extension is
// left.
func (d *demo) uninstallV1(ctx context.Context) (string, error) {
	if err := d.deleteCR(ctx); err != nil {
		return "", err
	}
	if d.operator != nil { // on a kwok node, on the host
		d.operator.stop()
		d.operator = nil
	}
	if _, err := d.chartpilot(ctx, "olm", "v1", "uninstall", pkg, "--timeout", d.opts.Timeout.String()); err != nil {
		return "", err
	}
	if err := d.nothingLeftV1(ctx); err != nil {
		return "", err
	}
	return "release uninstalled; gone: " + strings.Join(d.v1.Gone, ", "), nil
}

// nothingLeftV1 checks that the cluster holds nothing of the extension:
// its ClusterExtension and ClusterCatalog, the bundle's CRD and cluster
// RBAC, the installer's RBAC, the release records and the namespace.
func (d *demo) nothingLeftV1(ctx context.Context) error {
	type check struct {
		what string
		left func() ([]string, error)
	}
	named := func(obj client.Object, key client.ObjectKey) func() ([]string, error) {
		return func() ([]string, error) {
			err := d.olm.Get(ctx, key, obj)
			if isNotFound(err) {
				return nil, nil
			}
			return []string{key.String()}, err
		}
	}
	v1 := func(kind string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(extension.GroupVersion.WithKind(kind))
		return u
	}
	labelled := func(list client.ObjectList, opts ...client.ListOption) func() ([]string, error) {
		return func() ([]string, error) {
			if err := d.olm.List(ctx, list, opts...); err != nil {
				return nil, err
			}
			var left []string
			switch l := list.(type) {
			case *rbacv1.ClusterRoleList:
				for _, o := range l.Items {
					left = append(left, "ClusterRole "+o.Name)
				}
			case *rbacv1.ClusterRoleBindingList:
				for _, o := range l.Items {
					left = append(left, "ClusterRoleBinding "+o.Name)
				}
			case *corev1.SecretList:
				for _, o := range l.Items {
					if o.Labels["name"] == pkg || strings.HasPrefix(o.Name, "sh.helm.release.v1."+pkg) {
						left = append(left, "Secret "+o.Name)
					}
				}
			}
			return left, nil
		}
	}
	installer := client.MatchingLabels{extension.ExtensionLabel: pkg}
	bundle := client.MatchingLabels{extension.OwnerNameLabel: pkg}
	checks := []check{
		{"ClusterExtension", named(v1(extension.ExtensionKind), client.ObjectKey{Name: pkg})},
		{"ClusterCatalog", named(v1(extension.CatalogKind), client.ObjectKey{Name: extension.CatalogName(pkg)})},
		{"the Hello CRD", named(&apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: helloGVR.Resource + "." + helloGVR.Group})},
		{"the installer's ClusterRole and ClusterRoleBinding", labelled(&rbacv1.ClusterRoleList{}, installer)},
		{"", labelled(&rbacv1.ClusterRoleBindingList{}, installer)},
		{"the bundle's ClusterRoles and ClusterRoleBindings", labelled(&rbacv1.ClusterRoleList{}, bundle)},
		{"", labelled(&rbacv1.ClusterRoleBindingList{}, bundle)},
		{"the release records", labelled(&corev1.SecretList{}, client.InNamespace(cluster.OLMv1Namespace), client.MatchingLabels{"owner": "operator-controller"})},
		{"namespace " + d.opts.Namespace + " (the installer's ServiceAccount, Role and RoleBinding with it)", named(&corev1.Namespace{}, client.ObjectKey{Name: d.opts.Namespace})},
	}
	err := poll(ctx, d.opts.Timeout, "nothing of the ClusterExtension to be left", func() (bool, string, error) {
		var left []string
		for _, c := range checks {
			l, err := c.left()
			if err != nil {
				return false, "", err
			}
			left = append(left, l...)
		}
		return len(left) == 0, "left: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		return err
	}
	for _, c := range checks {
		if c.what != "" {
			d.v1.Gone = append(d.v1.Gone, c.what)
		}
	}
	return nil
}

// On a kwok node pods are simulated and the journey publishes no images:
// OLM v1's journey starts a registry on loopback (catalogd and
// operator-controller run on the host and pull from it over plain HTTP),
// publishes the bundles and catalogs there as images, and runs the
// operator on the host as the ServiceAccount operator-controller created.

// kwokBuildSteps make bundle v0.1.0 on a kwok node.
func (d *demo) kwokBuildSteps() []step { return d.kwokSteps()[:3] }

// kwokV1Steps are OLM v1's journey on a kwok node after OLM v0's, which
// made both bundles.
func (d *demo) kwokV1Steps() []step {
	return append([]step{
		{"OLM v1: bundle and catalog images of v0.1.0 and v0.2.0 in a registry on loopback: make bundle-build bundle-push, chartpilot catalog build --bundles, chartpilot image push", d.kwokImages("0.1.0", "0.2.0")},
	}, d.kwokV1Journey()...)
}

// kwokV1AloneSteps are OLM v1's journey alone on a kwok node.
func (d *demo) kwokV1AloneSteps() []step {
	build := append(d.kwokBuildSteps(),
		step{"OLM v1: bundle and catalog images of v0.1.0 in a registry on loopback: make bundle-build bundle-push, chartpilot catalog build --bundles, chartpilot image push", d.kwokImages("0.1.0")})
	return d.alone(build,
		step{makeV2Title + ": chart change, generate, bundle, scorecard with upgrade test", d.makeV2(nil)},
		step{publishV2Title + ": bundle and catalog images", d.publishV2(d.kwokImages("0.2.0"))},
		d.kwokV1Journey())
}

// kwokV1Journey are OLM v1's steps on a kwok node once the images exist.
func (d *demo) kwokV1Journey() []step {
	v1 := d.v1Steps()
	return []step{
		v1[0],
		{"OLM v1: run the operator as the ServiceAccount operator-controller created, watching all namespaces: chartpilot run", d.runOperatorV1("0.1.0")},
		{"OLM v1: create a Hello; wait for Deployed and Ready", d.createCR},
		v1[3],
		{"OLM v1: the operator v0.2.0 upgrades the release; nothing is lost", d.upgradeOperatorV1},
		v1[5],
	}
}

// projectOf is the directory of the project of version: the copy of
// v0.1.0's once v0.2.0 is made.
func (d *demo) projectOf(version string) string {
	if version == "0.1.0" && d.previous != "" {
		return d.previous
	}
	return d.projectDir
}

// kwokImages publishes the bundles of versions as images, each in a
// catalog image of its own version holding the versions before it too.
func (d *demo) kwokImages(versions ...string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		d.beginV1()
		if err := d.startRegistry(); err != nil {
			return "", err
		}
		for _, v := range versions {
			if _, err := d.r.run(ctx, d.projectOf(v), "make", "bundle-build", "bundle-push", "BUNDLE_IMG="+d.bundleImg(v), "CHARTPILOT="+d.opts.Binary); err != nil {
				return "", err
			}
			// make catalog-build builds FROM the opm image, which a kwok
			// node's cluster has not: OLM v1 reads the catalog alone.
			if _, err := d.chartpilot(ctx, "catalog", "build", "--dir", d.v1CatalogDir(), "--image", d.catalogImg(v), "--bundles", d.bundleImg(v)); err != nil {
				return "", err
			}
			if _, err := d.chartpilot(ctx, "image", "push", d.catalogImg(v)); err != nil {
				return "", err
			}
		}
		var cats []string
		for _, v := range versions {
			cats = append(cats, d.catalogImg(v))
		}
		return "catalog images " + strings.Join(cats, ", "), nil
	}
}

// v1CatalogDir is the catalog of OLM v1's images on a kwok node: OLM v0's
// there publishes its bundles inline.
func (d *demo) v1CatalogDir() string {
	if d.opts.OLM == cluster.OLMv1 {
		return d.catalogDir
	}
	return filepath.Join(d.opts.Dir, "catalog-images")
}

// startRegistry starts an image registry on loopback for the rest of the
// run, unless one runs.
func (d *demo) startRegistry() error {
	if d.registry != "" {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("a registry on loopback: %w", err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	d.registrySrv, d.registry = srv, l.Addr().String()
	return nil
}

// runOperatorV1 starts the operator of version on the host as the
// ServiceAccount of its CSV, which operator-controller created, watching
// all namespaces (OLM v1 installs for AllNamespaces).
func (d *demo) runOperatorV1(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		dir := d.projectOf(version)
		csv, err := readCSV(dir)
		if err != nil {
			return "", err
		}
		deps, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "deployments")
		if len(deps) == 0 {
			return "", fmt.Errorf("the CSV of %s has no deployment", dir)
		}
		dep, _ := deps[0].(map[string]any)
		sa, _, _ := unstructured.NestedString(dep, "spec", "template", "spec", "serviceAccountName")
		var acct corev1.ServiceAccount
		if err := d.olm.Get(ctx, client.ObjectKey{Namespace: d.opts.Namespace, Name: sa}, &acct); err != nil {
			return "", fmt.Errorf("the operator's ServiceAccount, which operator-controller creates: %w", err)
		}
		d.watchNS = ""
		return d.startOperator(ctx, version, dir, sa)
	}
}

func (d *demo) upgradeOperatorV1(ctx context.Context) (string, error) {
	if _, err := d.runOperatorV1("0.2.0")(ctx); err != nil {
		return "", err
	}
	return d.checkUpgrade(ctx)
}
