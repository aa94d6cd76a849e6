package cli

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// writeTestBundle writes a minimal registry+v1 bundle directory.
func writeTestBundle(t *testing.T, pkg, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), pkg+".v"+version)
	files := map[string]string{
		"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: ` + pkg + `
  operators.operatorframework.io.bundle.channels.v1: stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
`,
		"manifests/csv.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: ` + pkg + `.v` + version + `
spec:
  displayName: ` + pkg + `
  description: Test operator.
  version: ` + version + `
  installModes:
  - {type: AllNamespaces, supported: true}
  install: {strategy: deployment, spec: {deployments: []}}
`,
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

// The catalog commands in the order a user runs them, on one directory.
func TestCatalogCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	b1, b2, b15 := writeTestBundle(t, "demo", "0.1.0"), writeTestBundle(t, "demo", "0.2.0"), writeTestBundle(t, "demo", "0.1.5")
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	pushRef := strings.TrimPrefix(reg.URL, "http://") + "/demo-catalog:v1"
	steps := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "init from a bundle", args: []string{"catalog", "init", "--dir", dir, "--from-bundle", b1}, wantOut: []string{"initialized the package in " + dir}},
		{name: "init twice", args: []string{"catalog", "init", "--dir", dir, "--from-bundle", b1}, wantErr: `package already in catalog: "demo"`},
		{name: "add inline", args: []string{"catalog", "add", "--dir", dir, b1}, wantOut: []string{"added demo.v0.1.0 (0.1.0, inline) to package demo", "channel stable: head"}},
		{name: "add with image", args: []string{"catalog", "add", "--dir", dir, b2, "--image", "quay.io/me/demo-bundle:v0.2.0"}, wantOut: []string{"added demo.v0.2.0 (0.2.0, image quay.io/me/demo-bundle:v0.2.0)", "channel stable: head, replaces demo.v0.1.0, skipRange '>=0.1.0 <0.2.0'"}},
		{name: "add an older patch", args: []string{"catalog", "add", "--dir", dir, b15, "-o", "json"}, wantOut: []string{`"replaces": "demo.v0.1.0"`, `"head": false`}},
		{name: "add an existing version", args: []string{"catalog", "add", "--dir", dir, b15}, wantErr: "bundle already in catalog"},
		{name: "add --replace", args: []string{"catalog", "add", "--dir", dir, b15, "--replace"}, wantOut: []string{"replaced demo.v0.1.5 with demo.v0.1.5"}},
		{name: "an image reference with --image", args: []string{"catalog", "add", "--dir", dir, "quay.io/me/demo-bundle:v0.3.0", "--image", "quay.io/me/demo-bundle:v0.3.0"}, wantErr: "--image is for bundle directories; quay.io/me/demo-bundle:v0.3.0 is published under its own reference"},
		{name: "bad channel scope", args: []string{"catalog", "add", "--dir", dir, b15, "--channel-scope", "patch"}, wantErr: "must be one of none, major, minor"},
		{name: "validate", args: []string{"catalog", "validate", "--dir", dir}, wantOut: []string{"catalog " + dir + " is valid"}},
		{name: "deprecate a bundle", args: []string{"catalog", "deprecate", "demo", "--dir", dir, "--bundle", "0.1.0", "-m", "upgrade"}, wantOut: []string{"deprecated bundle 0.1.0 of package demo"}},
		{name: "deprecate needs a message", args: []string{"catalog", "deprecate", "demo", "--dir", dir}, wantErr: `required flag(s) "message" not set`},
		{name: "graph", args: []string{"catalog", "graph", "--dir", dir}, wantOut: []string{"flowchart LR", "pkg_demo__stable__demo_v0_1_5 -- replaces --> pkg_demo__stable__demo_v0_2_0"}},
		{name: "graph svg", args: []string{"catalog", "graph", "--dir", dir, "--format", "svg"}, wantOut: []string{"<svg xmlns=", "demo / stable", "</svg>"}},
		{name: "render yaml", args: []string{"catalog", "render", "--dir", dir}, wantOut: []string{"schema: olm.package", "schema: olm.deprecations", "skipRange: '>=0.1.0 <0.2.0'"}},
		{name: "render rejects text", args: []string{"catalog", "render", "--dir", dir, "-o", "text"}, wantErr: "must be one of yaml, json"},
		{name: "remove", args: []string{"catalog", "remove", "demo", "--bundle", "0.1.5", "--dir", dir}, wantOut: []string{"removed demo.v0.1.5 from package demo"}},
		{name: "add it again", args: []string{"catalog", "add", "--dir", dir, b15}, wantOut: []string{"added demo.v0.1.5"}},
		{name: "remove names a bundle", args: []string{"catalog", "remove", "demo", "--dir", dir}, wantErr: "name the bundle to remove: --bundle"},
		{name: "remove takes the bundle once", args: []string{"catalog", "remove", "demo", "0.1.5", "--bundle", "0.1.5", "--dir", dir}, wantErr: "the bundle is given twice"},
		{name: "remove the old way still works", args: []string{"catalog", "remove", "demo", "0.1.5", "--dir", dir},
			wantOut: []string{"deprecated: use catalog remove demo --bundle 0.1.5", "removed demo.v0.1.5 from package demo"}},
		{name: "build needs a destination", args: []string{"catalog", "build", "--dir", dir}, wantErr: "--oci-layout DIR and/or --push REF"},
		{name: "build into an OCI layout", args: []string{"catalog", "build", "--dir", dir, "--oci-layout", filepath.Join(dir, "..", "oci"), "--tag", "v1"}, wantOut: []string{"wrote sha256:", "to OCI layout"}},
		{name: "push", args: []string{"catalog", "push", pushRef, "--dir", dir, "--no-cache"}, wantOut: []string{"pushed " + pushRef + "@sha256:"}},
		{name: "push takes no build flags", args: []string{"catalog", "push", pushRef, "--dir", dir, "--bundles", "x"}, wantErr: "unknown flag: --bundles"},
		{name: "dockerfile", args: []string{"catalog", "dockerfile", "--dir", "build/catalog", "-f", "-"}, wantOut: []string{"ADD build/catalog /configs", "LABEL operators.operatorframework.io.index.configs.v1=/configs"}},
		{name: "serve a missing directory", args: []string{"catalog", "serve", filepath.Join(dir, "nope"), "--port", "0"}, wantErr: "no such file or directory"},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	out, err := run(t, "catalog", "render", "--dir", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var schemas []string
	for dec.More() {
		var blob struct{ Schema string }
		if err := dec.Decode(&blob); err != nil {
			t.Fatal(err)
		}
		schemas = append(schemas, blob.Schema)
	}
	want := "olm.package olm.channel olm.bundle olm.bundle olm.deprecations"
	if got := strings.Join(schemas, " "); got != want {
		t.Errorf("rendered blobs = %s, want %s", got, want)
	}
}
