package apply_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/apply/kustomize"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	goldenfile "github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/scaffold"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The tests of package apply/kustomize (ParseImage, Build) live here beside
// those that apply what it builds: a test binary of its own would link
// kustomize and the Kubernetes clients once more in go test ./....

func TestParseImage(t *testing.T) {
	tests := []struct {
		in      string
		want    kustomize.Image
		wantErr bool
	}{
		{in: "controller=example.com/op:v1", want: kustomize.Image{Name: "controller", Ref: "example.com/op:v1"}},
		{in: "controller=127.0.0.1:5000/op@sha256:0123", want: kustomize.Image{Name: "controller", Ref: "127.0.0.1:5000/op@sha256:0123"}},
		{in: "example.com/op:v1", wantErr: true},
		{in: "controller=", wantErr: true},
		{in: "=example.com/op", wantErr: true},
	}
	for _, tt := range tests {
		got, err := kustomize.ParseImage(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseImage(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// project scaffolds an operator project the way `chartpilot init` does.
func project(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	err := scaffold.Init(scaffold.Options{APIOptions: scaffold.APIOptions{Chart: filepath.Join("..", "chart", "testdata", "charts", "webapp")}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func marshal(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes()
}

func TestBuildGolden(t *testing.T) {
	dir := project(t)
	tests := []struct {
		name   string
		dir    string
		images []kustomize.Image
	}{
		{name: "default-with-image", dir: filepath.Join(dir, "config", "default"), images: []kustomize.Image{{Name: "controller", Ref: "127.0.0.1:5000/webapp-operator:v0.1.0"}}},
		{name: "crd", dir: filepath.Join(dir, "config", "crd")},
		{name: "withcr", dir: filepath.Join("testdata", "withcr")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := kustomize.Build(tt.dir, tt.images)
			if err != nil {
				t.Fatal(err)
			}
			got := marshal(t, objs)
			goldenfile.File(t, filepath.Join("testdata", "golden", tt.name+".yaml"), got, *update)
		})
	}
}

// setImage edits config/manager/kustomization.yaml as operator-sdk's
// `kustomize edit set image controller=REF` does.
func setImage(t *testing.T, project, newName, newTag string) {
	t.Helper()
	path := filepath.Join(project, "config", "manager", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "newName: controller\n  newTag: latest", "newName: "+newName+"\n  newTag: "+newTag, 1)
	if edited == string(data) {
		t.Fatalf("%s has no images entry for controller:\n%s", path, data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The image given wins over one an images entry of config/manager set
// (kustomize edit set image), as IMG does with operator-sdk's Makefile.
func TestBuildImageWinsOverImagesEntry(t *testing.T) {
	dir := project(t)
	setImage(t, dir, "quay.io/old/op", "v0.0.1")
	tests := []struct {
		name   string
		images []kustomize.Image
		want   string
	}{
		{name: "no image given", want: "quay.io/old/op:v0.0.1"},
		{name: "tag", images: []kustomize.Image{{Name: "controller", Ref: "example.com/op:v1"}}, want: "example.com/op:v1"},
		{name: "digest", images: []kustomize.Image{{Name: "controller", Ref: "example.com/op@sha256:" + strings.Repeat("a", 64)}}, want: "example.com/op@sha256:" + strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := kustomize.Build(filepath.Join(dir, "config", "default"), tt.images)
			if err != nil {
				t.Fatal(err)
			}
			var images []string
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				cs, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "template", "spec", "containers")
				for _, c := range cs.([]any) {
					images = append(images, c.(map[string]any)["image"].(string))
				}
			}
			if len(images) != 1 || images[0] != tt.want {
				t.Errorf("the manager runs %q, want %q", images, tt.want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n- missing.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := kustomize.Build(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "kustomize build "+dir) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Build() = %v, want an error naming the directory and the missing file", err)
	}
}

// TestApplyDelete applies a scaffolded project's config/default and a
// kustomization with a CRD and one of its custom resources to a real API
// server, applies them again, deletes them, and deletes them again.
func TestApplyDelete(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cfg)
	dir := project(t)
	deployment, err := kustomize.Build(filepath.Join(dir, "config", "default"), []kustomize.Image{{Name: "controller", Ref: "127.0.0.1:5000/webapp-operator:v0.1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	withCR, err := kustomize.Build(filepath.Join("testdata", "withcr"), nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := append(deployment, withCR...)

	var out bytes.Buffer
	// Applying again changes nothing, says so, and fails on nothing.
	for _, want := range []apply.Outcome{apply.Created, apply.Unchanged} {
		out.Reset()
		if err := apply.Apply(ctx, objs, apply.Options{Config: cfg, Out: &out}); err != nil {
			t.Fatalf("Apply: %v\n%s", err, out.String())
		}
		if n := strings.Count(out.String(), " "+string(want)+"\n"); n != len(objs) {
			t.Errorf("%d of %d objects reported %s:\n%s", n, len(objs), want, out.String())
		}
	}
	// A label taken out is a change, and the only one.
	i := slices.IndexFunc(withCR, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Namespace" })
	ns := withCR[i].DeepCopy()
	ns.SetLabels(map[string]string{"team": "a"})
	for _, want := range []apply.Outcome{apply.Configured, apply.Configured, apply.Unchanged} {
		out.Reset()
		if err := apply.Apply(ctx, []*unstructured.Unstructured{ns}, apply.Options{Config: cfg, Out: &out}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(out.String(), " "+string(want)+"\n") {
			t.Errorf("%s labels %v: %s, want %s", ns.GetName(), ns.GetLabels(), out.String(), want)
		}
		ns.SetLabels(nil)
	}

	deployments := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	d, err := deployments.Namespace("webapp-operator-system").Get(ctx, "webapp-operator-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "127.0.0.1:5000/webapp-operator:v0.1.0" {
		t.Errorf("manager image %v, want the --image one", img)
	}
	managers := map[string]bool{}
	for _, f := range d.GetManagedFields() {
		managers[f.Manager+"/"+string(f.Operation)] = true
	}
	if !managers["chartpilot/Apply"] {
		t.Errorf("field managers %v, want chartpilot/Apply", managers)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "test.chartpilot.dev", Version: "v1", Resource: "widgets"})
	if _, err := widgets.Namespace("widgets").Get(ctx, "first", metav1.GetOptions{}); err != nil {
		t.Errorf("the custom resource: %v", err)
	}

	out.Reset()
	if err := apply.Delete(ctx, objs, apply.Options{Config: cfg, Out: &out}); err != nil {
		t.Fatalf("Delete: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "widgets.test.chartpilot.dev/first deleted") {
		t.Errorf("deleted first %q, want the custom resource before its CRD", lines[0])
	}
	if _, err := deployments.Namespace("webapp-operator-system").Get(ctx, "webapp-operator-controller-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deployment after Delete: %v, want NotFound", err)
	}

	// Deleting again: every object is gone, or its kind is (the CRD was
	// deleted); the namespaces alone remain, Terminating (envtest runs no
	// namespace controller), and deleting them again is accepted.
	out.Reset()
	if err := apply.Delete(ctx, objs, apply.Options{Config: cfg, Out: &out}); err != nil {
		t.Fatalf("Delete again: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "widgets.test.chartpilot.dev/first deleted") || !strings.Contains(out.String(), "not found") {
		t.Errorf("second Delete:\n%s", out.String())
	}
}

func TestApplyNoConfig(t *testing.T) {
	if err := apply.Apply(context.Background(), nil, apply.Options{}); err == nil {
		t.Error("Apply without a cluster configuration succeeded")
	}
}

// TestDeleteWaits deletes a custom resource whose finalizer an operator
// removes a moment later, with its CRD: with Wait, Delete returns once both
// are gone, the custom resource first; when a finalizer stays, it fails
// after the timeout, naming the object and the finalizer.
func TestDeleteWaits(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cfg)
	objs, err := kustomize.Build(filepath.Join("testdata", "withcr"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var crdAndCR []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Namespace" { // envtest runs no namespace controller
			crdAndCR = append(crdAndCR, o)
		}
	}
	if err := apply.Apply(ctx, objs, apply.Options{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "test.chartpilot.dev", Version: "v1", Resource: "widgets"}).Namespace("widgets")
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	setFinalizers := func(f ...string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, must(json.Marshal(f)))
		if _, err := widgets.Patch(ctx, "first", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a finalizer that stays", func(t *testing.T) {
		setFinalizers("test.chartpilot.dev/stays")
		err := apply.Delete(ctx, crdAndCR, apply.Options{Config: cfg, Wait: true, Timeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "waiting for widgets.test.chartpilot.dev/first to be deleted (finalizers [test.chartpilot.dev/stays])") {
			t.Fatalf("error %v, want one naming the custom resource and its finalizer", err)
		}
		// The CRD, a later step, was not deleted.
		crd, err := crds.Get(ctx, "widgets.test.chartpilot.dev", metav1.GetOptions{})
		if err != nil || crd.GetDeletionTimestamp() != nil {
			t.Fatalf("the CRD after a failed wait: %v, deleting %v", err, crd.GetDeletionTimestamp())
		}
	})

	t.Run("an operator removes the finalizer", func(t *testing.T) {
		// The custom resource is Terminating; the operator finishes its
		// uninstall a moment later.
		released := time.Now().Add(time.Second)
		go func() {
			time.Sleep(time.Until(released))
			setFinalizers()
		}()
		var out bytes.Buffer
		if err := apply.Delete(ctx, crdAndCR, apply.Options{Config: cfg, Wait: true, Out: &out}); err != nil {
			t.Fatalf("Delete: %v\n%s", err, out.String())
		}
		if time.Now().Before(released) {
			t.Error("Delete returned before the finalizer was removed")
		}
		if _, err := widgets.Get(ctx, "first", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the custom resource after Delete: %v, want NotFound", err)
		}
		if _, err := crds.Get(ctx, "widgets.test.chartpilot.dev", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the CRD after Delete: %v, want NotFound", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Without prometheus-operator's CRDs, config/default as scaffolded applies
// (it leaves ../prometheus out); with ../prometheus enabled, applying it
// fails saying what to do.
func TestApplyWithoutPrometheusOperator(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	tests := []struct {
		name    string
		enable  bool
		wantErr string
	}{
		{name: "as scaffolded"},
		{name: "with ../prometheus enabled", enable: true,
			wantErr: "the cluster has no prometheus-operator CRDs; install them, or remove ../prometheus from config/default/kustomization.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := project(t)
			if tt.enable {
				if err := scaffold.EnableMonitoring(dir); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := kustomize.Build(filepath.Join(dir, "config", "default"), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = apply.Apply(context.Background(), objs, apply.Options{Config: cfg, Out: io.Discard})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Apply: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Apply = %v, want the missing CRDs named with what to do", err)
			}
		})
	}
}
