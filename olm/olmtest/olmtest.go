package olmtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/serve"
)

// Bundle describes a test operator's bundle.
type Bundle struct {
	// Package is the package name; the CRD is widgets.<Package>.example.com.
	Package string
	// Version is the CSV's semver version.
	Version string
	// InstallModes are the supported install modes; default OwnNamespace
	// and AllNamespaces.
	InstallModes []string
	// Rules are the namespaced permissions of the operator's ServiceAccount
	// (<Package>-operator), as YAML flow sequences; default ConfigMaps and
	// Widgets.
	Rules []string
	// ClusterRules are its cluster-wide permissions (clusterPermissions),
	// as YAML flow sequences; default none.
	ClusterRules []string
	// Image is the operator's image; default example.com/<Package>:v<Version>
	// (which a kwok node never pulls).
	Image string
}

// CSVName is the bundle's ClusterServiceVersion name.
func (b Bundle) CSVName() string { return b.Package + ".v" + b.Version }

// Group is the API group of the bundle's CRD.
func (b Bundle) Group() string { return b.Package + ".example.com" }

// CRDName is the name of the bundle's CRD.
func (b Bundle) CRDName() string { return "widgets." + b.Group() }

// ServiceAccount is the operator's ServiceAccount name.
func (b Bundle) ServiceAccount() string { return b.Package + "-operator" }

// Deployment is the operator Deployment's name.
func (b Bundle) Deployment() string { return b.Package + "-controller-manager" }

// EditorRole is the ClusterRole the bundle ships besides its CSV, as
// scaffolded bundles ship an editor and a viewer role for each API.
func (b Bundle) EditorRole() string { return b.Package + "-widget-editor-role" }

// Write writes the bundle directory under a temporary directory of t.
func (b Bundle) Write(t testing.TB) string {
	t.Helper()
	modes := b.InstallModes
	if len(modes) == 0 {
		modes = []string{"OwnNamespace", "AllNamespaces"}
	}
	var modeLines []string
	for _, m := range []string{"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"} {
		supported := false
		for _, s := range modes {
			supported = supported || s == m
		}
		modeLines = append(modeLines, fmt.Sprintf("  - {type: %s, supported: %v}", m, supported))
	}
	rules := b.Rules
	if len(rules) == 0 {
		rules = []string{
			`{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}`,
			fmt.Sprintf(`{apiGroups: [%s], resources: [widgets, widgets/status, widgets/finalizers], verbs: [get, list, watch, update, patch]}`, b.Group()),
		}
	}
	clusterPermissions := ""
	if len(b.ClusterRules) > 0 {
		clusterPermissions = fmt.Sprintf("      clusterPermissions:\n      - serviceAccountName: %s\n        rules:\n        - %s\n",
			b.ServiceAccount(), strings.Join(b.ClusterRules, "\n        - "))
	}
	files := map[string]string{
		"metadata/annotations.yaml": fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
`, b.Package),
		"manifests/crd.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s
spec:
  group: %[1]s
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, b.Group(), b.CRDName()),
		"manifests/" + b.Package + ".clusterserviceversion.yaml": fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: %[3]s
spec:
  displayName: %[1]s
  description: A test operator.
  version: %[2]s
  provider: {name: Example}
  installModes:
%[4]s
  customresourcedefinitions:
    owned:
    - {name: %[5]s, version: v1, kind: Widget, displayName: Widget}
  install:
    strategy: deployment
    spec:
%[9]s      permissions:
      - serviceAccountName: %[6]s
        rules:
%[7]s
      deployments:
      - name: %[8]s
        spec:
          replicas: 1
          selector: {matchLabels: {app: %[1]s}}
          template:
            metadata: {labels: {app: %[1]s}}
            spec:
              serviceAccountName: %[6]s
              containers:
              - name: manager
                image: example.com/%[1]s:v%[2]s
`, b.Package, b.Version, b.CSVName(), strings.Join(modeLines, "\n"), b.CRDName(), b.ServiceAccount(), "        - "+strings.Join(rules, "\n        - "), b.Deployment(), clusterPermissions),
		"manifests/" + b.EditorRole() + "_rbac.authorization.k8s.io_v1_clusterrole.yaml": fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
rules:
- {apiGroups: [%s], resources: [widgets], verbs: [create, delete, get, list, patch, update, watch]}
`, b.EditorRole(), b.Group()),
	}
	dir := filepath.Join(t.TempDir(), b.CSVName())
	if b.Image != "" {
		files["manifests/"+b.Package+".clusterserviceversion.yaml"] = strings.Replace(files["manifests/"+b.Package+".clusterserviceversion.yaml"],
			fmt.Sprintf("image: example.com/%s:v%s", b.Package, b.Version), "image: "+b.Image, 1)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Catalog writes a catalog directory holding the bundles, published inline.
// Every bundle must be of the same package.
func Catalog(t testing.TB, bundles ...Bundle) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: dir, FromBundle: bundles[0].Write(t)}); err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: b.Write(t)}); err != nil {
			t.Fatalf("adding %s to the catalog: %v", b.CSVName(), err)
		}
	}
	return dir
}

// Serve serves a catalog directory on a free loopback port until the test
// ends and returns its address.
func Serve(t testing.TB, dir string) string {
	t.Helper()
	s, err := serve.NewServer(context.Background(), serve.Options{Dir: dir, Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("catalog server: %v", err)
		}
	})
	return s.Addr()
}
