package scaffold

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/rbac/rbactest"
)

// readYAML reads one YAML object of a project.
func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readRoles reads role.yaml: the ClusterRole, then the Role.
func readRoles(t *testing.T, path string) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%s: %d documents, want a ClusterRole and a Role", path, len(docs))
	}
	var cr rbacv1.ClusterRole
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cr); err != nil || cr.Kind != "ClusterRole" {
		t.Fatalf("%s: first document: %v (kind %q)", path, err, cr.Kind)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &role); err != nil || role.Kind != "Role" {
		t.Fatalf("%s: second document: %v (kind %q)", path, err, role.Kind)
	}
	return &cr, &role
}

// TestScaffoldedProjectOnAPIServer takes freshly scaffolded projects to a real
// API server: their CRD is accepted, their sample CR validates and a wrong
// one is refused, and the operator's ServiceAccount bound to the project's
// role.yaml as OLM binds it in OwnNamespace mode (the Role in the namespace
// only) writes the CR's status (the runtime's fields) and installs,
// upgrades, repairs and uninstalls the vendored chart.
func TestScaffoldedProjectOnAPIServer(t *testing.T) {
	s := rbactest.Start(t)
	dyn := dynamic.NewForConfigOrDie(s.Admin)
	tests := []struct {
		name, chart string
		upgrade     map[string]any
		// invalid is a spec the CRD must refuse.
		invalid map[string]any
	}{
		{name: "webapp", chart: "webapp", upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}},
			invalid: map[string]any{"replicaCount": "three"}},
		{name: "umbrella", chart: "umbrella", upgrade: map[string]any{"cache": map[string]any{"pdb": map[string]any{"enabled": true}, "replicas": 2}},
			invalid: map[string]any{"cache": map[string]any{"enabled": "yes"}}},
		{name: "clusterwide", chart: "clusterwide", upgrade: map[string]any{"description": "upgraded"},
			invalid: map[string]any{"priority": map[string]any{}}},
		{name: "validated", chart: "validated", upgrade: map[string]any{"mode": "safe"},
			invalid: map[string]any{"mode": "reckless"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), tt.name+"-operator")
			if err := Init(Options{APIOptions: APIOptions{Chart: chartDir(tt.chart), Group: tt.name}, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			proj, err := LoadProject(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := proj.Resources[0]
			plural := strings.ToLower(r.Kind) + "s"
			gvr := schema.GroupVersionResource{Group: r.FullGroup(), Version: r.Version, Resource: plural}

			crds, err := envtest.InstallCRDs(s.Admin, envtest.CRDInstallOptions{Paths: []string{filepath.Join(dir, "config", "crd", "bases")}})
			if err != nil {
				t.Fatalf("the API server refused the CRD: %v", err)
			}
			// The API's CRD, and its backups', restores', backup schedules' and restore grants'.
			var names []string
			for _, crd := range crds {
				names = append(names, crd.Spec.Names.Plural)
			}
			slices.Sort(names)
			if want := []string{strings.ToLower(r.Kind) + "backups", strings.ToLower(r.Kind) + "restores", strings.ToLower(r.Kind) + "backupschedules", strings.ToLower(r.Kind) + "restoregrants", plural}; !slices.Equal(names, slices.Sorted(slices.Values(want))) {
				t.Fatalf("CRDs installed: %v, want %v", names, want)
			}
			var sample unstructured.Unstructured
			readYAML(t, filepath.Join(dir, "config", "samples", r.FullGroup()+"_"+r.Version+"_"+strings.ToLower(r.Kind)+".yaml"), &sample.Object)
			ns := "p-" + tt.name
			// As OLM grants the CSV's permissions in OwnNamespace mode: the
			// ClusterRole cluster-wide, the Role in the namespace.
			clusterRole, role := readRoles(t, filepath.Join(dir, filepath.FromSlash(RoleFile)))
			op := s.Bind(t, ns, clusterRole, role, nil)

			sample.SetNamespace(ns)
			if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &sample, metav1.CreateOptions{}); err != nil {
				t.Fatalf("the sample CR was refused: %v", err)
			}
			bad := sample.DeepCopy()
			bad.SetName("bad")
			bad.Object["spec"] = tt.invalid
			if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("a CR with spec %v: %v, want Invalid", tt.invalid, err)
			}

			// The runtime, as the operator: status with every field it writes.
			asOp := dynamic.NewForConfigOrDie(op.Config)
			cr, err := asOp.Resource(gvr).Namespace(ns).Get(ctx, sample.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			status := map[string]any{
				"observedGeneration": cr.GetGeneration(),
				"conditions": []any{map[string]any{"type": "Deployed", "status": "True", "reason": "InstallSuccessful",
					"message": "installed", "lastTransitionTime": "2026-01-02T03:04:05Z"}},
				"deployedRelease": map[string]any{"name": sample.GetName(), "version": int64(1), "chart": tt.chart,
					"appVersion": "1.0", "digest": "sha256:0123"},
			}
			cr.Object["status"] = status
			updated, err := asOp.Resource(gvr).Namespace(ns).UpdateStatus(ctx, cr, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("status update as %s: %v", op.User, err)
			}
			if got, _, _ := unstructured.NestedString(updated.Object, "status", "deployedRelease", "digest"); got != "sha256:0123" {
				t.Errorf("status pruned: %v", updated.Object["status"])
			}
			cr = updated
			cr.SetFinalizers([]string{"helm.sdk.operatorframework.io/uninstall-release"})
			if _, err := asOp.Resource(gvr).Namespace(ns).Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("adding a finalizer as %s: %v", op.User, err)
			}

			if err := s.HelmCycle(op, filepath.Join(dir, "helm-charts", tt.chart), tt.upgrade, nil); err != nil {
				t.Fatalf("as %s: %v", op.User, err)
			}
		})
	}
}
