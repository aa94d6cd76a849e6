package extension_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// A deprecation chartpilot catalog deprecate writes reaches the
// ClusterExtension as operator-controller's conditions, which olm v1
// status and doctor explain with the way off.
func TestDeprecationSeen(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	reg := olmtest.Registry(t)
	b := olmtest.Bundle{Package: "v1old", Version: "0.1.0"}
	dir, ref := olmtest.PushBundle(t, reg, b, nil)
	cat := olmtest.WriteCatalog(t, false, olmtest.ImageBundle{Dir: dir, Ref: ref})
	const message = "v0.1.0 loses data on upgrade: use 0.2.0"
	if err := edit.Deprecate(t.Context(), edit.DeprecateOptions{Dir: cat, Package: b.Package, Bundle: b.Version, Message: message}); err != nil {
		t.Fatal(err)
	}
	image := olmtest.PushCatalogDir(t, reg+"/"+b.Package+"-catalog:1", cat)

	ns := fmt.Sprintf("%s-%d", b.Package, time.Now().UnixNano()%100000)
	if _, err := extension.Install(ctx, c, extension.InstallOptions{Package: b.Package, Namespace: ns, CatalogImage: image}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uninstallQuietly(c, b.Package) })
	// Installed, and deprecated: the deprecation warns, it does not block.
	r, err := extension.Wait(ctx, c, b.Package, extension.WaitOptions{Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, reportText(r))
	}
	deps := r.Deprecations()
	if len(deps) != 1 || deps[0].Type != extension.TypeBundleDeprecated || !strings.Contains(deps[0].Message, message) ||
		!strings.Contains(deps[0].Meaning, "chartpilot olm v1 upgrade "+b.Package+" --version") {
		t.Fatalf("deprecations %+v, want BundleDeprecated with the catalog's message and the way off", deps)
	}

	out, _, err := chartpilot(t, "olm", "v1", "status", b.Package)
	if err != nil || !strings.Contains(out, "BundleDeprecated=True") || !strings.Contains(out, message) || !strings.Contains(out, "--version VERSION") {
		t.Errorf("olm v1 status (err %v) does not explain the deprecation:\n%s", err, out)
	}
	rep := doctorReport(t, "--extension", b.Package)
	if !slices.ContainsFunc(rep.Checks, func(ch doctor.Check) bool {
		return ch.Severity == doctor.Warn && strings.Contains(ch.Message, message) && strings.Contains(ch.Fix, "--version VERSION")
	}) {
		t.Errorf("doctor --extension %s gives no warning of the deprecation: %+v", b.Package, rep.Checks)
	}
}

// On OLM v1 v1.11 a ClusterExtension is cluster-admin trust: doctor warns
// about a subject that may write one without being a cluster admin, and
// names the binding.
func TestWhoMayInstallNamed(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	reg := olmtest.Registry(t)
	b := olmtest.Bundle{Package: "v1trust", Version: "0.1.0"}
	dir, ref := olmtest.PushBundle(t, reg, b, nil)
	image := olmtest.PushCatalog(t, reg+"/"+b.Package+"-catalog:1", false, olmtest.ImageBundle{Dir: dir, Ref: ref})
	ns := fmt.Sprintf("%s-%d", b.Package, time.Now().UnixNano()%100000)
	if _, err := extension.Install(ctx, c, extension.InstallOptions{Package: b.Package, Namespace: ns, CatalogImage: image}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uninstallQuietly(c, b.Package) })
	warned := func() bool {
		rep := doctorReport(t, "--extension", b.Package)
		return slices.ContainsFunc(rep.Checks, func(ch doctor.Check) bool {
			return ch.Check == doctor.CheckExtensionWriters && ch.Severity == doctor.Warn &&
				strings.Contains(ch.Message, "User ce-writer (ClusterRoleBinding ce-writer)") && strings.Contains(ch.Fix, "ValidatingAdmissionPolicy")
		})
	}
	if warned() {
		t.Fatal("doctor warns of ce-writer before it is bound")
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ce-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{extension.Group}, Resources: []string{"clusterextensions"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ce-writer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ce-writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ce-writer"}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	if !warned() {
		t.Error("doctor does not warn of ce-writer, who may create ClusterExtensions without being a cluster admin")
	}
}
