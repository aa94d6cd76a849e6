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

// The Makefile's bundle journey through the commands: generate, validate,
// capabilities, build, push.
func TestBundleCommands(t *testing.T) {
	charts := filepath.Join("..", "..", "chart", "testdata", "charts")
	dir := filepath.Join(t.TempDir(), "op")
	if _, err := run(t, "init", dir, "--chart", filepath.Join(charts, "webapp")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/op-bundle:v0.1.0"
	catalogRef := strings.TrimPrefix(srv.URL, "http://") + "/op-catalog:v0.1.0"
	catalogDir := filepath.Join(t.TempDir(), "catalog")
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")

	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
	}{
		{name: "generate needs a version", args: []string{"bundle", "generate", dir}, wantErr: `required flag(s) "version" not set`},
		{name: "generate rejects a bad --image", args: []string{"bundle", "generate", dir, "--version", "0.1.0", "--image", "controller"}, wantErr: "want NAME=IMAGE"},
		{name: "generate", args: []string{"bundle", "generate", dir, "--version", "0.1.0", "--image", "controller=quay.io/me/op:v0.1.0"},
			wantOut: `wrote bundle ` + filepath.Join(dir, "bundle") + `: op.v0.1.0 (package op, channels alpha, default alpha), capabilities "Basic Install"`},
		{name: "generate again changes nothing", args: []string{"bundle", "generate", dir, "--version", "0.1.0", "--image", "controller=quay.io/me/op:v0.1.0"}, wantOut: "unchanged: bundle"},
		{name: "generate lists the charts' images", args: []string{"bundle", "generate", dir, "--version", "0.1.0", "--image", "controller=quay.io/me/op:v0.1.0"},
			wantOut: "relatedImages found in the charts' renders (1):\n    registry.k8s.io/pause:1.27.0 (webapp/templates/deployment.yaml: Deployment/release-webapp spec.template.spec.containers[0].image"},
		{name: "validate", args: []string{"bundle", "validate", filepath.Join(dir, "bundle")}, wantOut: "is valid: 0 error(s)"},
		{name: "validate rejects a bad selector", args: []string{"bundle", "validate", filepath.Join(dir, "bundle"), "--select-optional", "operatorhub"}, wantErr: "want suite=NAME"},
		{name: "validate rejects a bad output", args: []string{"bundle", "validate", "-o", "xml"}, wantErr: "must be one of text, json"},
		{name: "capabilities", args: []string{"bundle", "capabilities", dir}, wantOut: "[ ] backup and restore: not proven: no scorecard results given"},
		{name: "build", args: []string{"bundle", "build", "--store", store, "--tag", ref, filepath.Join(dir, "bundle")}, wantOut: "built " + ref + "@sha256:"},
		{name: "push", args: []string{"bundle", "push", "--store", store, ref}, wantOut: "pushed " + ref + "@sha256:"},
		// make catalog-build catalog-push: the pushed bundle published in a
		// new catalog, the catalog image kept, then pushed.
		{name: "catalog build needs a destination", args: []string{"catalog", "build", "--dir", catalogDir}, wantErr: "say where the image goes"},
		{name: "catalog build from bundle images", args: []string{"catalog", "build", "--dir", catalogDir, "--store", store, "--image", catalogRef, "--bundles", ref},
			wantOut: "published op.v0.1.0 (" + ref + ") in package op"},
		{name: "catalog build again replaces the bundle", args: []string{"catalog", "build", "--dir", catalogDir, "--store", store, "--image", catalogRef, "--bundles", ref}, wantOut: "built " + catalogRef + "@sha256:"},
		{name: "catalog push", args: []string{"image", "push", "--store", store, catalogRef}, wantOut: "pushed " + catalogRef + "@sha256:"},
		{name: "image push of an image never built", args: []string{"image", "push", "--store", store, ref + "-other"}, wantErr: "no image built under this reference"},
		{name: "image build without watches", args: []string{"image", "build", "--store", store, "--tag", ref, t.TempDir()}, wantErr: "needs watches.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
		})
	}

	// SOURCE_DATE_EPOCH fixed createdAt.
	csv, err := os.ReadFile(filepath.Join(dir, "bundle", "manifests", "op.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), `createdAt: "2026-01-01T00:00:00Z"`) {
		t.Error("createdAt does not follow SOURCE_DATE_EPOCH")
	}
	// A broken bundle: exit non-zero, findings as JSON naming file and field.
	if err := os.WriteFile(filepath.Join(dir, "bundle", "metadata", "annotations.yaml"), []byte("annotations: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "bundle", "validate", filepath.Join(dir, "bundle"), "-o", "json")
	if err == nil || !strings.Contains(err.Error(), "validation error(s)") {
		t.Fatalf("error = %v", err)
	}
	var rep struct {
		Passed   bool `json:"passed"`
		Findings []struct{ Level, File, Field string }
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Passed || len(rep.Findings) == 0 || rep.Findings[0].File != "metadata/annotations.yaml" || rep.Findings[0].Field == "" {
		t.Errorf("report: %+v", rep)
	}
}
