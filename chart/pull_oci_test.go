package chart_test

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/pull"
)

// TestPullOCI pushes packaged charts with Helm's registry client to a real
// OCI registry (go-containerregistry's, plain HTTP on 127.0.0.1) and pulls
// them back by oci:// reference.
func TestPullOCI(t *testing.T) {
	t.Setenv("HELM_CACHE_HOME", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	client, err := registry.NewClient(registry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	packaged := t.TempDir()
	// webapp at its own version and at a later one, to pick between.
	for _, version := range []string{"", "0.2.0", "1.0.0-rc.1"} {
		c, err := chart.Load(chart.TestChart("webapp"))
		if err != nil {
			t.Fatal(err)
		}
		if version != "" {
			c.Helm.Metadata.Version = version
		}
		path, err := chartutil.Save(c.Helm, packaged)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Push(data, host+"/charts/webapp:"+c.Helm.Metadata.Version); err != nil {
			t.Fatalf("pushing %s: %v", path, err)
		}
	}

	ref := "oci://" + host + "/charts/webapp"
	tests := []struct {
		name, ref, version string
		plainHTTP          bool
		wantFile, wantErr  string
	}{
		{name: "exact version", ref: ref, version: "0.1.0", plainHTTP: true, wantFile: "webapp-0.1.0.tgz"},
		{name: "latest release", ref: ref, plainHTTP: true, wantFile: "webapp-0.2.0.tgz"},
		{name: "constraint", ref: ref, version: "~0.1", plainHTTP: true, wantFile: "webapp-0.1.0.tgz"},
		{name: "pre-release constraint", ref: ref, version: ">=1.0.0-0", plainHTTP: true, wantFile: "webapp-1.0.0-rc.1.tgz"},
		{name: "tag in the reference", ref: ref + ":0.1.0", plainHTTP: true, wantFile: "webapp-0.1.0.tgz"},
		{name: "tag and version differ", ref: ref + ":0.1.0", version: "0.2.0", plainHTTP: true, wantErr: "the reference's tag 0.1.0 and the version 0.2.0 differ"},
		{name: "no such version", ref: ref, version: "9.9.9", plainHTTP: true, wantErr: "pulling chart " + ref + " 9.9.9"},
		{name: "no version satisfies", ref: ref, version: "^3", plainHTTP: true, wantErr: `no version satisfies "^3"`},
		{name: "no such chart", ref: "oci://" + host + "/charts/nope", plainHTTP: true, wantErr: "listing the tags of " + host + "/charts/nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			path, err := pull.Chart(pull.Options{Name: tt.ref, Version: tt.version, PlainHTTP: tt.plainHTTP, Dest: dest})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("pull.Chart() = %v, want an error containing %q", err, tt.wantErr)
				}
				if entries, _ := os.ReadDir(dest); len(entries) > 0 {
					t.Errorf("a failed pull left %d files in the destination", len(entries))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if path != filepath.Join(dest, tt.wantFile) {
				t.Errorf("path = %s, want %s", path, filepath.Join(dest, tt.wantFile))
			}
			pulled, err := chart.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if pulled.Name() != "webapp" || len(pulled.Helm.Templates) == 0 {
				t.Errorf("pulled chart %s with %d templates", pulled.Name(), len(pulled.Helm.Templates))
			}
		})
	}
}
