package cli

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/bundle"
)

func TestBundleRBACCommand(t *testing.T) {
	widget := filepath.Join("..", "..", "bundle", "olmv1", "testdata")
	v1, v2 := filepath.Join(widget, "widget-0.1.0"), filepath.Join(widget, "widget-0.2.0")

	// A bundle image in a registry on loopback.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/widget-bundle:v0.1.0"
	img, err := bundle.BuildImage(v1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}

	// A bundle operator-controller refuses: no AllNamespaces.
	refused := t.TempDir()
	if err := os.CopyFS(refused, os.DirFS(v1)); err != nil {
		t.Fatal(err)
	}
	csvFile := filepath.Join(refused, "manifests", "widget-operator.clusterserviceversion.yaml")
	csv, err := os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvFile, []byte(strings.Replace(string(csv), "{type: AllNamespaces, supported: true}", "{type: AllNamespaces, supported: false}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    []string
		wantErr string
		// wantOut are substrings of the output.
		wantOut []string
	}{
		{name: "needs --olm-v1", args: []string{"bundle", "rbac", v1}, wantErr: "--olm-v1 is required"},
		{name: "a directory", args: []string{"bundle", "rbac", "--olm-v1", v1},
			wantOut: []string{"for widget-operator.v0.1.0: 25 rules", "kind: ClusterRole", "namespace: widget-operator-system", "name: widget-operator-installer",
				"warning: RoleBinding widget-view binds ClusterRole view"}},
		{name: "an upgrade, named", args: []string{"bundle", "rbac", "--olm-v1", v2, "--upgrade-from", v1, "-n", "widgets", "--extension", "widgets", "--service-account", "deployer"},
			wantOut: []string{"for widget-operator.v0.2.0: 29 rules", "namespace: widgets", "name: deployer", "- widgets\n  resources:\n  - clusterextensions/finalizers"}},
		{name: "an image", args: []string{"bundle", "rbac", "--olm-v1", ref}, wantOut: []string{"for widget-operator.v0.1.0: 25 rules"}},
		{name: "json", args: []string{"bundle", "rbac", "--olm-v1", v1, "-o", "json"}, wantOut: []string{`"kind": "ClusterRoleBinding"`}},
		{name: "a refused bundle", args: []string{"bundle", "rbac", "--olm-v1", refused}, wantErr: "operator-controller v1.2.0 refuses the bundle: it installs operators for all namespaces only"},
		{name: "not a bundle", args: []string{"bundle", "rbac", "--olm-v1", t.TempDir()}, wantErr: "no manifests directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// The YAML is what kubectl create -f reads: five objects.
	out, err := run(t, "bundle", "rbac", "--olm-v1", v1)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out[:strings.Index(out, "warning:")], "---\n")[1:]
	if len(docs) != 5 {
		t.Fatalf("%d YAML documents, want 5", len(docs))
	}
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil || obj["kind"] == nil {
			t.Errorf("document %q: %v", d, err)
		}
	}
}
