package realnode

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// OLM v1 in pods on the real node, where images take their real path:
// catalogd pulls the catalog image from the cluster's registry and serves
// it through its Service over HTTPS, operator-controller reads it there,
// pulls the bundle image and installs it; the bundle's operator pod runs.
// A new catalog image upgrades it in place, and uninstall leaves nothing.
func TestOLMv1InPods(t *testing.T) {
	c := node.Get(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := olm.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	reg, pkg := c.RegistryAddr(), "hello-v1"
	hello := c.Image(images.HelloServer)
	v1 := olmtest.Bundle{Package: pkg, Version: "0.1.0", Image: hello}
	v2 := olmtest.Bundle{Package: pkg, Version: "0.2.0", Image: hello}
	d1, r1 := olmtest.PushBundle(t, reg, v1, nil)
	d2, r2 := olmtest.PushBundle(t, reg, v2, nil)
	cat1 := olmtest.PushCatalog(t, reg+"/"+pkg+"-catalog:1", false, olmtest.ImageBundle{Dir: d1, Ref: r1})
	cat2 := olmtest.PushCatalog(t, reg+"/"+pkg+"-catalog:2", false, olmtest.ImageBundle{Dir: d1, Ref: r1}, olmtest.ImageBundle{Dir: d2, Ref: r2})

	all := func(context.Context, extension.InstallerRequest) (extension.InstallerRules, error) {
		return extension.InstallerRules{Cluster: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}, nil
	}
	ns := "hello-v1"
	began := time.Now()
	if _, err := extension.Install(ctx, cl, extension.InstallOptions{Package: pkg, Namespace: ns, CatalogImage: cat1, InstallerRules: all}); err != nil {
		t.Fatal(err)
	}
	if r, err := extension.Wait(ctx, cl, pkg, extension.WaitOptions{Timeout: 3 * time.Minute}); err != nil {
		t.Fatalf("%v\n%s", err, report(r))
	}
	installTime := time.Since(began)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitDeploymentAvailable(ctx, cs, ns, v1.Deployment()); err != nil {
		t.Fatalf("the operator of the bundle: %v", err)
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, v1.Deployment(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	began = time.Now()
	up, err := extension.Upgrade(ctx, cl, extension.UpgradeOptions{Name: pkg, CatalogImage: cat2, InstallerRules: all})
	if err != nil {
		t.Fatal(err)
	}
	if up.To == nil || up.To.Version != "0.2.0" {
		t.Fatalf("upgrade to %+v (%s)", up.To, up.Note)
	}
	if r, err := extension.Wait(ctx, cl, pkg, extension.WaitOptions{Timeout: 3 * time.Minute, Version: "0.2.0"}); err != nil {
		t.Fatalf("%v\n%s", err, report(r))
	}
	upgradeTime := time.Since(began)
	after, err := cs.AppsV1().Deployments(ns).Get(ctx, v1.Deployment(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != dep.UID {
		t.Errorf("the upgrade replaced the Deployment: uid %s, was %s", after.UID, dep.UID)
	}

	began = time.Now()
	un, err := extension.Uninstall(ctx, cl, extension.UninstallOptions{Name: pkg, Config: cfg, Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s is left", ns)
	}
	t.Logf("OLM v1 in pods: created to Installed %s, upgrade by a new catalog image %s, uninstall %s (%d objects collected)",
		installTime.Round(10*time.Millisecond), upgradeTime.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond), un.Collected)
}

func report(r *extension.Report) string {
	if r == nil {
		return "(no report)"
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		return fmt.Sprint(err)
	}
	return b.String()
}
