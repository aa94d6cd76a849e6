package chart

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// testChart is the path of a chart under testdata/charts.
func testChart(name string) string { return filepath.Join("testdata", "charts", name) }

// objectList lists "Source: apiVersion/Kind name" for each rendered object.
func objectList(r *Rendered) []string {
	var out []string
	for _, m := range r.Objects {
		out = append(out, m.Source+": "+m.Object.GetAPIVersion()+"/"+m.Object.GetKind()+" "+m.Object.GetName())
	}
	return out
}

// writeFile writes a file under dir, creating its directory.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		chart string
		opts  RenderOptions
		want  []string
		crds  []string
		// wantErr is a substring of the expected error.
		wantErr string
	}{{
		name:  "plain app with defaults",
		chart: "webapp",
		want: []string{
			"webapp/templates/configmap.yaml: v1/ConfigMap release-webapp",
			"webapp/templates/service.yaml: v1/Service release-webapp",
			"webapp/templates/deployment.yaml: apps/v1/Deployment release-webapp",
		},
	}, {
		name:  "value-gated autoscaler turned on",
		chart: "webapp",
		opts:  RenderOptions{ReleaseName: "web", Values: map[string]any{"autoscaling": map[string]any{"enabled": true}}},
		want: []string{
			"webapp/templates/configmap.yaml: v1/ConfigMap web-webapp",
			"webapp/templates/service.yaml: v1/Service web-webapp",
			"webapp/templates/deployment.yaml: apps/v1/Deployment web-webapp",
			"webapp/templates/hpa.yaml: autoscaling/v2/HorizontalPodAutoscaler web-webapp",
		},
	}, {
		name:  "file:// subchart rendered with its parent",
		chart: "umbrella",
		want: []string{
			"umbrella/templates/configmap.yaml: v1/ConfigMap release-front",
			"umbrella/charts/cache/templates/service.yaml: v1/Service release-cache",
			"umbrella/charts/cache/templates/statefulset.yaml: apps/v1/StatefulSet release-cache",
		},
	}, {
		name:  "subchart disabled by its condition",
		chart: "umbrella",
		opts:  RenderOptions{Values: map[string]any{"cache": map[string]any{"enabled": false}}},
		want:  []string{"umbrella/templates/configmap.yaml: v1/ConfigMap release-front"},
	}, {
		name:  "chart shipping a CRD",
		chart: "widgets",
		want:  []string{"widgets/templates/widget.yaml: example.com/v1/Widget release-default"},
		crds:  []string{"widgets/crds/widgets.yaml"},
	}, {
		name:  "cluster-scoped objects",
		chart: "clusterwide",
		want: []string{
			"clusterwide/templates/priorityclass.yaml: scheduling.k8s.io/v1/PriorityClass release-high",
			"clusterwide/templates/rbac.yaml: v1/ServiceAccount release-reader",
			"clusterwide/templates/rbac.yaml: rbac.authorization.k8s.io/v1/ClusterRole release-node-reader",
			"clusterwide/templates/rbac.yaml: rbac.authorization.k8s.io/v1/ClusterRoleBinding release-node-reader",
		},
	}, {
		name:    "values.schema.json enforced",
		chart:   "validated",
		opts:    RenderOptions{Values: map[string]any{"replicas": 0}},
		wantErr: "replicas",
	}, {
		name:    "values.schema.json enum enforced",
		chart:   "validated",
		opts:    RenderOptions{Values: map[string]any{"mode": "reckless"}},
		wantErr: "mode",
	}, {
		name:  "removed APIs still render",
		chart: "legacy",
		want: []string{
			"legacy/templates/psp.yaml: policy/v1beta1/PodSecurityPolicy release-restricted",
			"legacy/templates/deployment.yaml: extensions/v1beta1/Deployment release-legacy",
			"legacy/templates/cronjob.yaml: batch/v1beta1/CronJob release-nightly",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(testChart(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Render(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Render() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := objectList(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
			var crds []string
			for _, m := range r.CRDs {
				crds = append(crds, m.Source)
			}
			if !reflect.DeepEqual(crds, tt.crds) {
				t.Errorf("CRDs = %q, want %q", crds, tt.crds)
			}
		})
	}
}

// TestRenderIsRepeatable checks that a render with a subchart disabled does
// not leak into the next render of the same Chart.
func TestRenderIsRepeatable(t *testing.T) {
	c, err := Load(testChart("umbrella"))
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := c.Renderer()
	if err != nil {
		t.Fatal(err)
	}
	off := RenderOptions{Values: map[string]any{"cache": map[string]any{"enabled": false}}}
	for i, opts := range []RenderOptions{off, {}, off, {}, off, {}} {
		// Fresh renders of the Chart, then renders sharing one Renderer.
		render := c.Render
		if i >= 2 {
			render = renderer.Render
		}
		r, err := render(opts)
		if err != nil {
			t.Fatal(err)
		}
		want := 3
		if opts.Values != nil {
			want = 1
		}
		if len(r.Objects) != want {
			t.Errorf("render %d: %d objects, want %d: %q", i, len(r.Objects), want, objectList(r))
		}
	}
}

func TestLoadPackagedAndVendored(t *testing.T) {
	c, err := Load(testChart("umbrella"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Render(RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vendored, err := c.Vendor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(vendored, "charts", "cache-0.3.1.tgz")); err != nil {
		t.Fatalf("dependency not vendored: %v", err)
	}
	tgz, err := chartutil.Save(c.Helm, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{vendored, tgz} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Render(RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(objectList(got), objectList(want)) {
				t.Errorf("objects = %q, want %q", objectList(got), objectList(want))
			}
		})
	}
}

func TestLoadDependencyErrors(t *testing.T) {
	const sub = "apiVersion: v2\nname: sub\nversion: 0.5.0\n"
	tests := []struct {
		name string
		// deps is the dependencies block of the parent's Chart.yaml.
		deps string
		// sub is written to sub/Chart.yaml beside the parent when not empty.
		sub     string
		wantErr string
	}{{
		name:    "missing local chart",
		deps:    "  - name: sub\n    version: 0.5.0\n    repository: file://../nowhere\n",
		wantErr: `dependency "sub"`,
	}, {
		name:    "version constraint not met",
		deps:    "  - name: sub\n    version: \">=1.0.0\"\n    repository: file://../sub\n",
		sub:     sub,
		wantErr: `has version 0.5.0, which does not satisfy ">=1.0.0"`,
	}, {
		name:    "name mismatch",
		deps:    "  - name: other\n    version: 0.5.0\n    repository: file://../sub\n",
		sub:     sub,
		wantErr: `holds chart "sub"`,
	}, {
		name:    "remote repository not vendored",
		deps:    "  - name: sub\n    version: 0.5.0\n    repository: https://charts.example.com\n",
		wantErr: "is not vendored under charts/",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "parent/Chart.yaml", "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n"+tt.deps)
			if tt.sub != "" {
				writeFile(t, dir, "sub/Chart.yaml", tt.sub)
			}
			_, err := Load(filepath.Join(dir, "parent"))
			if !errors.Is(err, ErrUnresolvedDependency) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load() error = %v, want ErrUnresolvedDependency containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadRefusesLibraryCharts(t *testing.T) {
	const library = "apiVersion: v2\nname: lib\ntype: library\nversion: 0.1.0\n"
	tests := []struct {
		name string
		// files are written under a temporary directory.
		files map[string]string
		// load is the chart to load, relative to that directory.
		load string
		// packaged loads a .tgz of the chart instead of its directory.
		packaged bool
		// wantErr is a substring of the error; empty: Load succeeds.
		wantErr string
	}{{
		name:    "a library chart",
		files:   map[string]string{"lib/Chart.yaml": library, "lib/templates/_helpers.tpl": "{{- define \"lib.name\" }}x{{- end }}\n"},
		load:    "lib",
		wantErr: filepath.Join("lib", "Chart.yaml") + `: type is "library"`,
	}, {
		name:     "a packaged library chart",
		files:    map[string]string{"lib/Chart.yaml": library},
		load:     "lib",
		packaged: true,
		wantErr:  `lib-0.1.0.tgz (Chart.yaml): type is "library"`,
	}, {
		name:  "an application chart",
		files: map[string]string{"app/Chart.yaml": "apiVersion: v2\nname: app\ntype: application\nversion: 0.1.0\n"},
		load:  "app",
	}, {
		name: "an application chart depending on a library chart",
		files: map[string]string{
			"lib/Chart.yaml": library,
			"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: lib\n    version: 0.1.0\n    repository: file://../lib\n",
		},
		load: "app",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			path := filepath.Join(dir, tt.load)
			if tt.packaged {
				c, err := load(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if path, err = chartutil.Save(c, dir); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrLibraryChart) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load() error = %v, want ErrLibraryChart containing %q", err, tt.wantErr)
			}
		})
	}
}

// .Capabilities.APIVersions is the served set when one is given, Helm's
// built-in list otherwise, plus APIVersions either way.
func TestRenderServedAPIVersions(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "pdb/Chart.yaml", "apiVersion: v2\nname: pdb\nversion: 0.1.0\n")
	writeFile(t, dir, "pdb/templates/pdb.yaml", `{{- if .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" }}
apiVersion: policy/v1
{{- else }}
apiVersion: policy/v1beta1
{{- end }}
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}
spec:
  maxUnavailable: 1
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .Release.Name }}
{{- end }}
`)
	ch, err := Load(filepath.Join(dir, "pdb"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts RenderOptions
		want []string
	}{{
		// Helm's list holds group/versions only, no kinds: the switch
		// takes the old API that `helm template` shows.
		name: "Helm's built-in list",
		want: []string{"pdb/templates/pdb.yaml: policy/v1beta1/PodDisruptionBudget release"},
	}, {
		name: "a cluster serving policy/v1",
		opts: RenderOptions{ServedAPIVersions: []string{"v1", "policy/v1", "policy/v1/PodDisruptionBudget"}},
		want: []string{"pdb/templates/pdb.yaml: policy/v1/PodDisruptionBudget release"},
	}, {
		name: "a cluster serving only policy/v1beta1",
		opts: RenderOptions{ServedAPIVersions: []string{"v1", "policy/v1beta1", "policy/v1beta1/PodDisruptionBudget"}},
		want: []string{"pdb/templates/pdb.yaml: policy/v1beta1/PodDisruptionBudget release"},
	}, {
		name: "a served set plus a CRD's API",
		opts: RenderOptions{ServedAPIVersions: []string{"policy/v1/PodDisruptionBudget"}, APIVersions: []string{"monitoring.coreos.com/v1"}},
		want: []string{"pdb/templates/pdb.yaml: policy/v1/PodDisruptionBudget release", "pdb/templates/pdb.yaml: monitoring.coreos.com/v1/ServiceMonitor release"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ch.Render(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := objectList(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
