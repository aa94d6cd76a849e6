package scaffold

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart/charttest"
)

// pngBytes is the start of a PNG file: enough for an icon in a test.
const pngBytes = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

func TestCSVMetadataOf(t *testing.T) {
	png64 := base64.StdEncoding.EncodeToString([]byte(pngBytes))
	svg := `<svg xmlns="http://www.w3.org/2000/svg"/>`
	chartYAML := func(extra string) string {
		return "apiVersion: v2\nname: demo\nversion: 0.1.0\ndescription: A demo   service\n  for tests.\n" + extra
	}
	tests := []struct {
		name  string
		files map[string]string
		want  ChartCSVMetadata
	}{{
		name: "everything Chart.yaml says",
		files: map[string]string{"Chart.yaml": chartYAML(`home: https://demo.example.com
sources: [https://github.com/example/demo, https://github.com/example/demo-chart]
keywords: [demo, web, demo]
maintainers:
- {name: Ann, email: ann@example.com, url: https://example.com/ann}
- {name: Bob}
icon: data:image/png;base64,` + png64 + "\n")},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Keywords:    []string{"demo", "web"},
			Maintainers: []v1alpha1.Maintainer{{Name: "Ann", Email: "ann@example.com"}, {Name: "Bob"}},
			Links: []v1alpha1.AppLink{{Name: "Home", URL: "https://demo.example.com"},
				{Name: "Source 1", URL: "https://github.com/example/demo"}, {Name: "Source 2", URL: "https://github.com/example/demo-chart"}},
			Icon: &v1alpha1.Icon{Data: png64, MediaType: "image/png"}},
	}, {
		name: "README opening after the title and badges",
		files: map[string]string{"Chart.yaml": chartYAML(""), "README.md": `<!--- app-name: Demo -->
# Demo

[![CI](https://ci.example.com/badge.svg)](https://ci.example.com) ![Version](https://img.shields.io/badge/v-1-blue)

Demo serves **demos**
over HTTP.

> It also caches them.

## Install

helm install demo
`},
		want: ChartCSVMetadata{Description: "A demo service for tests.",
			LongDescription: "A demo service for tests.\n\nDemo serves **demos**\nover HTTP.\n\n> It also caches them."},
	}, {
		name:  "a README that opens with the description is not repeated",
		files: map[string]string{"Chart.yaml": chartYAML(""), "README.md": "# Demo\n\nA demo service for tests. More text.\n\n```console\nhelm install\n```\n"},
		want:  ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests. More text."},
	}, {
		name:  "an SVG icon in the chart",
		files: map[string]string{"Chart.yaml": chartYAML("icon: file://assets/icon.svg\n"), "assets/icon.svg": svg},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Icon: &v1alpha1.Icon{Data: base64.StdEncoding.EncodeToString([]byte(svg)), MediaType: "image/svg+xml"}},
	}, {
		name:  "a data: URL that is not base64",
		files: map[string]string{"Chart.yaml": chartYAML("icon: \"data:image/svg+xml;utf8,%3Csvg%2F%3E\"\n")},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Icon: &v1alpha1.Icon{Data: base64.StdEncoding.EncodeToString([]byte("<svg/>")), MediaType: "image/svg+xml"}},
	}, {
		name:  "a web icon is named in a warning",
		files: map[string]string{"Chart.yaml": chartYAML("icon: https://example.com/logo.png\n")},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Warnings: []string{"chart demo: Chart.yaml icon https://example.com/logo.png is a web address, which chartpilot does not fetch (it works offline): the CSV has no icon; put the image in the chart and name the file in icon, or set spec.icon (base64data, mediatype) in the base CSV"}},
	}, {
		name:  "an icon file the chart lacks",
		files: map[string]string{"Chart.yaml": chartYAML("icon: logo.png\n")},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Warnings: []string{"chart demo: Chart.yaml icon logo.png: no such file in the chart; the CSV has no icon"}},
	}, {
		name:  "an icon of a type a CSV cannot hold",
		files: map[string]string{"Chart.yaml": chartYAML("icon: data:image/webp;base64,AAAA\n")},
		want: ChartCSVMetadata{Description: "A demo service for tests.", LongDescription: "A demo service for tests.",
			Warnings: []string{`chart demo: Chart.yaml icon: media type "image/webp" is not one a CSV icon may have (image/png, image/jpeg, image/gif, image/svg+xml); the CSV has no icon (set spec.icon in the base CSV)`}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CSVMetadataOf(charttest.Load(t, tt.files))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CSVMetadataOf =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestReadmeOpening(t *testing.T) {
	long := strings.Repeat("Word after word. ", 120)
	tests := []struct{ name, readme, want string }{
		{name: "empty"},
		{name: "only a title", readme: "# Title\n"},
		{name: "stops at a heading", readme: "# T\n\nOne.\n\n# Next title\n\nTwo.\n", want: "One."},
		{name: "three paragraphs at most", readme: "A.\n\nB.\n\nC.\n\nD.\n", want: "A.\n\nB.\n\nC."},
		{name: "stops after enough text", readme: strings.Repeat("x", 700) + "\n\nMore.\n", want: strings.Repeat("x", 700)},
		{name: "a long paragraph is cut at a sentence", readme: long, want: strings.TrimSpace(long[:strings.LastIndex(long[:1500], ". ")+1])},
		{name: "stops at a table", readme: "Intro.\n| a | b |\n", want: "Intro."},
		{name: "HTML blocks end it", readme: "Intro.\n\n<p align=center><img src=x></p>\n\nMore.\n", want: "Intro."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readmeOpening(tt.readme); got != tt.want {
				t.Errorf("readmeOpening =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// init writes the base CSV from what the chart says; the README of a
// corpus chart gives a long description, and its web icon a warning.
func TestInitBaseCSVFromChart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo-operator")
	chartDir := charttest.Write(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\ndescription: A demo.\nhome: https://demo.example.com\nicon: https://demo.example.com/logo.png\nkeywords: [demo]\nmaintainers: [{name: Ann, email: ann@example.com}]\n",
		"README.md":   "# Demo\n\nDemo does demos.\n",
		"values.yaml": "{}\n",
	})
	var out bytes.Buffer
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir}, Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warning: chart demo: Chart.yaml icon https://demo.example.com/logo.png is a web address") {
		t.Errorf("init did not warn about the icon:\n%s", out.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(BaseCSVFile("demo-operator"))))
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := yaml.UnmarshalStrict(data, &csv); err != nil {
		t.Fatal(err)
	}
	if csv.Annotations[DescriptionAnnotation] != "A demo." || !strings.HasPrefix(csv.Spec.Description, "A demo.\n\nDemo does demos.\n\nEach Demo custom resource") {
		t.Errorf("descriptions %q, %q", csv.Annotations[DescriptionAnnotation], csv.Spec.Description)
	}
	if !reflect.DeepEqual(csv.Spec.Links, []v1alpha1.AppLink{{Name: "Home", URL: "https://demo.example.com"}}) ||
		!reflect.DeepEqual(csv.Spec.Maintainers, []v1alpha1.Maintainer{{Name: "Ann", Email: "ann@example.com"}}) ||
		!reflect.DeepEqual(csv.Spec.Keywords, []string{"demo"}) {
		t.Errorf("links %v, maintainers %v, keywords %v", csv.Spec.Links, csv.Spec.Maintainers, csv.Spec.Keywords)
	}
}
