package scaffold

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/chartpilot/chartpilot/apply/kustomize"
	"github.com/chartpilot/chartpilot/operator"
)

// config/shards builds, through the same code as `chartpilot apply`, into
// config/default's objects plus a Deployment per shard: each runs with
// --shard and leader election (so with a Lease of its own), under the
// project's ServiceAccount, selecting only its own pods.
func TestShardsOverlay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Build(filepath.Join(dir, ShardsDir), []kustomize.Image{{Name: "controller", Ref: "example.com/op:v1"}})
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := kustomize.Build(filepath.Join(dir, "config", "default"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(defaults) + 2; len(objs) != want {
		t.Errorf("%d objects, want config/default's %d and 2 Deployments", len(objs), len(defaults))
	}
	kinds := map[string][]string{}
	var deployments []appsv1.Deployment
	for _, o := range objs {
		kinds[o.GetKind()] = append(kinds[o.GetKind()], o.GetName())
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		deployments = append(deployments, d)
	}
	if len(kinds["Namespace"]) != 1 || len(kinds["ServiceAccount"]) != 1 {
		t.Fatalf("namespaces %v and service accounts %v, want one of each", kinds["Namespace"], kinds["ServiceAccount"])
	}
	shards := map[string]string{
		"webapp-operator-controller-manager":         "",
		"webapp-operator-controller-manager-shard-a": "a",
		"webapp-operator-controller-manager-shard-b": "b",
	}
	if len(deployments) != len(shards) {
		t.Fatalf("Deployments %v, want %d", kinds["Deployment"], len(shards))
	}
	for _, d := range deployments {
		shard, ok := shards[d.Name]
		if !ok {
			t.Errorf("Deployment %s: not one of %v", d.Name, shards)
			continue
		}
		pod := d.Spec.Template.Spec
		c := pod.Containers[0]
		want := []string{"--leader-elect", "--leader-election-id=webapp-operator"}
		if shard != "" {
			want = append(want, "--shard="+shard)
		}
		for _, arg := range want {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("Deployment %s: args %v, want %s", d.Name, c.Args, arg)
			}
		}
		if shard == "" && slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--shard") }) {
			t.Errorf("Deployment %s of no shard: args %v", d.Name, c.Args)
		}
		if d.Namespace != kinds["Namespace"][0] {
			t.Errorf("Deployment %s in namespace %s, want %s", d.Name, d.Namespace, kinds["Namespace"][0])
		}
		if pod.ServiceAccountName != kinds["ServiceAccount"][0] {
			t.Errorf("Deployment %s: service account %q, want %q", d.Name, pod.ServiceAccountName, kinds["ServiceAccount"][0])
		}
		if c.Image != "example.com/op:v1" {
			t.Errorf("Deployment %s: image %s", d.Name, c.Image)
		}
		if shard != "" && d.Spec.Template.Labels[operator.ShardLabel] != shard {
			t.Errorf("Deployment %s: pod labels %v, want %s=%s", d.Name, d.Spec.Template.Labels, operator.ShardLabel, shard)
		}
	}
	// A shard's Deployment selects none of another shard's pods.
	for _, a := range deployments {
		sel, err := metav1.LabelSelectorAsSelector(a.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range deployments {
			if a.Name != b.Name && shards[a.Name] != "" && sel.Matches(labels.Set(b.Spec.Template.Labels)) {
				t.Errorf("Deployment %s selects the pods of %s", a.Name, b.Name)
			}
		}
	}
}

// generate gives config/shards to a project made before it, and leaves
// the user's alone once there.
func TestGenerateWritesMissingShards(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "op")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(dir, filepath.FromSlash(ShardsDir))
	want := projectFiles(t, shards)
	if err := os.RemoveAll(shards); err != nil {
		t.Fatal(err)
	}
	if err := Generate(GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := projectFiles(t, shards); !maps.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("config/shards after generate: %v files, want init's %v", len(got), len(want))
	}
	edited := filepath.Join(shards, "kustomization.yaml")
	if err := os.WriteFile(edited, []byte("resources:\n- ../default\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Generate(GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(edited); string(data) != "resources:\n- ../default\n" {
		t.Errorf("generate rewrote the user's %s:\n%s", edited, data)
	}
}
