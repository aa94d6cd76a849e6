package scorecard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// releaseOutside finds what a release of an alm-example puts outside its
// namespace, rendered with the CR's spec and the watch's overrides; what
// it cannot tell counts too.
func TestReleaseOutside(t *testing.T) {
	namespaced := map[string]bool{"ConfigMap": true, "Secret": true, "ClusterRole": false}
	scope := func(gvk schema.GroupVersionKind) (bool, bool) {
		ns, ok := namespaced[gvk.Kind]
		return ns, ok
	}
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
	tests := []struct {
		name      string
		templates map[string]string
		values    string
		spec      map[string]any
		overrides map[string]string
		want      string // "" when nothing is outside
	}{
		{name: "namespaced only", templates: map[string]string{"cm.yaml": configMap}},
		{
			name:      "cluster-scoped",
			templates: map[string]string{"cm.yaml": configMap, "role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}-reader\n"},
			want:      "renders ClusterRole sample-reader, which is cluster-scoped",
		},
		{
			name:      "cluster-scoped when the spec enables it",
			templates: map[string]string{"role.yaml": "{{ if .Values.rbac }}apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n{{ end }}"},
			values:    "rbac: false\n", spec: map[string]any{"rbac": true},
			want: "renders ClusterRole reader, which is cluster-scoped",
		},
		{
			name:      "cluster-scoped when an override enables it",
			templates: map[string]string{"role.yaml": "{{ if .Values.rbac }}apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n{{ end }}"},
			values:    "rbac: false\n", overrides: map[string]string{"rbac": "true"},
			want: "renders ClusterRole reader, which is cluster-scoped",
		},
		{
			name:      "in a fixed namespace",
			templates: map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: kube-system\n"},
			want:      "renders Secret token in namespace kube-system, not the release's",
		},
		{
			name:      "in the release's namespace",
			templates: map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: {{ .Release.Namespace }}\n"},
		},
		{
			name:      "a kind nobody serves",
			templates: map[string]string{"x.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
			want:      "renders Widget w, of a kind neither the cluster nor the bundle serves",
		},
		{
			name:      "a chart that does not render",
			templates: map[string]string{"cm.yaml": `{{ required "name is required" .Values.name }}`},
			want:      "does not render",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, content string) {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("Chart.yaml", "apiVersion: v2\nname: probe\nversion: 0.1.0\n")
			write("values.yaml", tt.values)
			for name, text := range tt.templates {
				write(filepath.Join("templates", name), text)
			}
			ch, err := chart.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			w := watches.Watch{Group: "example.com", Version: "v1", Kind: "Probe", LoadedChart: ch.Helm, OverrideValues: tt.overrides}
			cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Probe", "metadata": map[string]any{"name": "sample"}}}
			if tt.spec != nil {
				cr.Object["spec"] = tt.spec
			}
			other := watches.Watch{Group: "example.com", Version: "v1", Kind: "Other", LoadedChart: ch.Helm}
			got := releaseOutside(cr, []watches.Watch{other, w}, scope)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
