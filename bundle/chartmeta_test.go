package bundle

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/scaffold"
)

// chartProject writes a chart from files and scaffolds its project.
func chartProject(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	chartDir := filepath.Join(root, "chart")
	for name, data := range files {
		p := filepath.Join(chartDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "demo-operator")
	if err := scaffold.Init(scaffold.Options{APIOptions: scaffold.APIOptions{Chart: chartDir}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The CSV's relatedImages hold the images of args, env and CR fields, and
// Generate says where it found each.
func TestGenerateRelatedImagesBeyondPodSpecs(t *testing.T) {
	dir := chartProject(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml": "catalog:\n  enabled: false\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      containers:
      - name: demo
        image: quay.io/demo/app:v1
        args: [--acme-solver-image=quay.io/demo/solver:v1]
        env:
        - {name: WORKER_IMAGE, value: quay.io/demo/worker:v1}
`,
		"templates/catalog.yaml": `{{- if .Values.catalog.enabled }}
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: {{ .Release.Name }}
spec:
  sourceType: grpc
  image: quay.io/demo/index:v1
{{- end }}
`,
	})
	res := mustGenerate(t, dir, GenerateOptions{})
	csv := readCSV(t, dir)
	var related []string
	for _, r := range csv.Spec.RelatedImages {
		related = append(related, r.Name+"="+r.Image)
	}
	for _, want := range []string{"demo=quay.io/demo/app:v1", "acme-solver-image=quay.io/demo/solver:v1", "worker-image=quay.io/demo/worker:v1", "index=quay.io/demo/index:v1", "manager=registry.example.com/op:v0.1.0"} {
		if !slices.Contains(related, want) {
			t.Errorf("relatedImages lack %s: %q", want, related)
		}
	}
	var found []string
	for _, img := range res.Images {
		found = append(found, img.String())
	}
	if want := "quay.io/demo/index:v1 (demo/templates/catalog.yaml: CatalogSource/release spec.image)"; !slices.Contains(found, want) {
		t.Errorf("Images lack %q: %q", want, found)
	}
}

// A namespaced object the chart puts in a namespace of its own cannot be
// created in the namespaced install modes: Generate says so while the CSV
// supports one.
func TestGenerateWarnsAboutObjectsElsewhere(t *testing.T) {
	dir := chartProject(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml": "{}\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-dashboard
  namespace: monitoring
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-own
  namespace: {{ .Release.Namespace }}
data: {a: b}
`,
	})
	const want = `demo/templates/cm.yaml: ConfigMap release-dashboard goes to namespace "monitoring", not the custom resource's, in a render of the chart (its defaults, a sample's values or a value gate on): in install modes OwnNamespace, SingleNamespace`
	res := mustGenerate(t, dir, GenerateOptions{})
	if n := countContaining(res.Warnings, want); n != 1 || countContaining(res.Warnings, "release-own") != 0 {
		t.Errorf("warnings %q, want one with %q", res.Warnings, want)
	}
	// Supporting AllNamespaces only, the CSV says nothing false.
	base := filepath.Join(dir, "config", "manifests", "bases", "demo-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer("- supported: true\n    type: OwnNamespace", "- supported: false\n    type: OwnNamespace",
		"- supported: true\n    type: SingleNamespace", "- supported: false\n    type: SingleNamespace").Replace(string(data))
	if err := os.WriteFile(base, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	res = mustGenerate(t, dir, GenerateOptions{})
	if countContaining(res.Warnings, "release-dashboard") != 0 {
		t.Errorf("warnings with AllNamespaces only: %q", res.Warnings)
	}
}

func countContaining(list []string, s string) int {
	n := 0
	for _, l := range list {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// The CSV says what the chart says (descriptions, keywords, maintainers,
// links, icon, minKubeVersion) and keeps the author's edits of the base.
func TestGenerateCSVSaysWhatTheChartSays(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg"/>`
	dir := chartProject(t, map[string]string{
		"Chart.yaml": `apiVersion: v2
name: demo
version: 0.1.0
description: A demo service.
home: https://demo.example.com
sources: [https://github.com/example/demo]
keywords: [demo, web]
maintainers: [{name: Ann, email: ann@example.com}]
icon: icon.svg
kubeVersion: ">=1.27.0-0"
`,
		"README.md":   "# Demo\n\nDemo serves demos.\n",
		"icon.svg":    svg,
		"values.yaml": "{}\n",
	})
	mustGenerate(t, dir, GenerateOptions{})
	csv := readCSV(t, dir)
	if csv.Annotations["description"] != "A demo service." || !strings.HasPrefix(csv.Spec.Description, "A demo service.\n\nDemo serves demos.\n\n") {
		t.Errorf("descriptions %q, %q", csv.Annotations["description"], csv.Spec.Description)
	}
	if !slices.Equal(csv.Spec.Keywords, []string{"demo", "web"}) || len(csv.Spec.Maintainers) != 1 || csv.Spec.Maintainers[0].Email != "ann@example.com" {
		t.Errorf("keywords %q, maintainers %+v", csv.Spec.Keywords, csv.Spec.Maintainers)
	}
	if len(csv.Spec.Links) != 2 || csv.Spec.Links[0].URL != "https://demo.example.com" || csv.Spec.Links[1].URL != "https://github.com/example/demo" {
		t.Errorf("links %+v", csv.Spec.Links)
	}
	if len(csv.Spec.Icon) != 1 || csv.Spec.Icon[0].MediaType != "image/svg+xml" || csv.Spec.Icon[0].Data != base64.StdEncoding.EncodeToString([]byte(svg)) {
		t.Errorf("icon %+v", csv.Spec.Icon)
	}
	if csv.Spec.MinKubeVersion != "1.27.0" {
		t.Errorf("minKubeVersion %q, want 1.27.0", csv.Spec.MinKubeVersion)
	}
	// The author's description wins.
	base := filepath.Join(dir, "config", "manifests", "bases", "demo-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "description: A demo service.\n", "description: Demos, operated.\n", 1)
	if edited == string(data) {
		t.Fatalf("the base has no description annotation:\n%s", data)
	}
	if err := os.WriteFile(base, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, dir, GenerateOptions{})
	if got := readCSV(t, dir).Annotations["description"]; got != "Demos, operated." {
		t.Errorf("the author's description was replaced by %q", got)
	}
}

// minKubeVersion is the lowest version every chart's kubeVersion allows,
// at least what the runtime needs. (Helm refuses to render a chart whose
// constraint it cannot read or that excludes the target version, so those
// never reach the bundle: see TestLowestKubeVersion.)
func TestGenerateMinKubeVersion(t *testing.T) {
	for _, tt := range []struct {
		kubeVersion, want, warning string
	}{
		{kubeVersion: "", want: DefaultMinKubeVersion},
		{kubeVersion: ">=1.16.0-0", want: DefaultMinKubeVersion},
		{kubeVersion: "^1.30.0", want: "1.30.0"},
		{kubeVersion: "<1.24.0 || >=1.28.0-0", want: "1.28.0"},
	} {
		t.Run(tt.kubeVersion, func(t *testing.T) {
			chartYAML := "apiVersion: v2\nname: demo\nversion: 0.1.0\n"
			if tt.kubeVersion != "" {
				chartYAML += "kubeVersion: \"" + tt.kubeVersion + "\"\n"
			}
			dir := chartProject(t, map[string]string{"Chart.yaml": chartYAML, "values.yaml": "{}\n"})
			res := mustGenerate(t, dir, GenerateOptions{KubeVersion: "1.36"})
			if got := readCSV(t, dir).Spec.MinKubeVersion; got != tt.want {
				t.Errorf("minKubeVersion %q, want %q", got, tt.want)
			}
			if tt.warning != "" && countContaining(res.Warnings, tt.warning) != 1 {
				t.Errorf("warnings %q, want one with %q", res.Warnings, tt.warning)
			}
		})
	}
}
