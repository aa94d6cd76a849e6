package rbac

import (
	"reflect"
	"sort"
	"testing"

	"github.com/chartpilot/chartpilot/chart/charttest"
)

// atomsOf analyzes one template (with helpers) of a chart whose
// values.yaml is given, and returns its gates as strings.
func atomsOf(t *testing.T, values, helpers, template string) (*chartGates, []string) {
	t.Helper()
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"values.yaml":            values,
		"templates/t.yaml":       template,
		"templates/_helpers.tpl": helpers,
	}
	c := charttest.Load(t, files)
	g := analyzeGates(c.Helm)
	tg := g.Templates["c/templates/t.yaml"]
	if tg == nil {
		t.Fatalf("no analysis of the template: %v", g.ParseErrors)
	}
	var out []string
	for _, a := range tg.Atoms {
		s := a.String()
		if a.Else {
			s += " (else)"
		}
		out = append(out, s)
	}
	for _, p := range tg.Probes {
		out = append(out, "probe "+p)
	}
	sort.Strings(out)
	return g, out
}

const doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

func TestAnalyzeGates(t *testing.T) {
	tests := []struct {
		name, helpers, template string
		want                    []string
	}{{
		name:     "a boolean",
		template: "{{- if .Values.a.enabled }}\n" + doc + "{{- end }}\n",
		want:     []string{"a.enabled"},
	}, {
		name:     "and, or, not, $.Values",
		template: "{{- if and .Values.a (or $.Values.b (not .Values.c)) }}\n" + doc + "{{- end }}\n",
		want:     []string{"!c", "a", "b"},
	}, {
		name:     "a comparison through a conversion",
		template: "{{- if gt (.Values.replicaCount | int) 1 }}\n" + doc + "{{- end }}\n",
		want:     []string{"replicaCount>1"},
	}, {
		name:     "a comparison the other way round",
		template: "{{- if lt 1 (int .Values.replicaCount) }}\n" + doc + "{{- end }}\n",
		want:     []string{"replicaCount>1"},
	}, {
		name:     "eq with a string, else",
		template: "{{- if eq .Values.mode \"cron\" }}\n" + doc + "{{- else }}\n" + doc + "{{- end }}\n",
		want:     []string{"mode=cron (else)"},
	}, {
		name:     "with and a field of its value",
		template: "{{- with .Values.pdb }}\n{{- if .enabled }}\n" + doc + "{{- end }}\n{{- end }}\n",
		want:     []string{"pdb", "pdb.enabled"},
	}, {
		name:     "range over a map's values: each element's field",
		template: "{{- range $name, $r := .Values.routes }}\n{{- if $r.enabled }}\n---\n" + doc + "{{- end }}\n{{- end }}\n",
		want:     []string{"routes", "routes.*.enabled"},
	}, {
		name:     "a nil-safe field of a parenthesized value",
		template: "{{- if (.Values.gateway).enabled }}\n" + doc + "{{- end }}\n",
		want:     []string{"gateway.enabled"},
	}, {
		name:     "empty and has",
		template: "{{- if not (empty .Values.hosts) }}\n" + doc + "{{- end }}\n{{- if has \"pdb\" .Values.features }}\n---\n" + doc + "{{- end }}\n",
		want:     []string{"features has pdb", "hosts"},
	}, {
		name:     "an include in the condition",
		helpers:  "{{- define \"c.enabled\" -}}{{- if .Values.x.enabled }}true{{- end }}{{- end -}}",
		template: "{{- if eq (include \"c.enabled\" .) \"true\" }}\n" + doc + "{{- end }}\n",
		want:     []string{"x.enabled"},
	}, {
		name:     "an apiVersion picked by a helper testing .Capabilities, under a non-boolean gate",
		helpers:  "{{- define \"c.pdb.apiVersion\" -}}{{- if .Capabilities.APIVersions.Has \"policy/v1\" }}policy/v1{{- else }}policy/v1beta1{{- end }}{{- end -}}",
		template: "{{- if gt (.Values.replicaCount | int) 1 }}\napiVersion: {{ include \"c.pdb.apiVersion\" . }}\nkind: PodDisruptionBudget\nmetadata:\n  name: x\n{{- end }}\n",
		want:     []string{"probe policy/v1", "replicaCount>1"},
	}, {
		name:     "a ternary on the kind line",
		template: "apiVersion: apps/v1\nkind: {{ ternary \"StatefulSet\" \"Deployment\" .Values.persistence.enabled }}\nmetadata:\n  name: x\n",
		want:     []string{"persistence.enabled (else)"},
	}, {
		name:     "conditions inside a document's fields do not gate",
		template: doc + "data:\n{{- if .Values.extra }}\n  extra: \"1\"\n{{- end }}\n",
		want:     nil,
	}, {
		name:     "conditions in a Role's rules do",
		template: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: x\n  {{- if .Values.labels }}\n  labels: {a: b}\n  {{- end }}\nrules:\n{{- if .Values.rbac.secrets }}\n  - {apiGroups: [\"\"], resources: [secrets], verbs: [get]}\n{{- end }}\n",
		want:     []string{"rbac.secrets"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := atomsOf(t, "{}\n", tt.helpers, tt.template)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gates = %q, want %q", got, tt.want)
			}
		})
	}
}

// What else reading the templates tells: required values, fail guards,
// how values are used (printed, iterated, read as maps, given to tpl),
// the documents that come whole from values.
func TestAnalyzeUses(t *testing.T) {
	tmpl := `{{- if .Values.tls.enabled }}
{{- if not .Values.tls.cert }}{{ fail "tls.cert is needed" }}{{ end }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Values.tls.secretName | quote }}
stringData:
  key: {{ required "tls.key please" .Values.tls.key }}
  {{- range $k, $v := .Values.tls.extra }}
  {{ $k }}: {{ $v | b64enc }}
  {{- end }}
  {{- if hasKey .Values.tls.annotations "x" }}{{ end }}
{{- end }}
{{- range .Values.extraObjects }}
---
{{ tpl . $ }}
{{- end }}
`
	g, _ := atomsOf(t, "tls: {}\n", "", tmpl)
	if len(g.Required) != 1 || g.Required[0].Path != "tls.key" || g.Required[0].Message != "tls.key please" {
		t.Errorf("required = %+v", g.Required)
	}
	if len(g.Fails) != 1 || len(g.Fails[0].Guards) != 2 || g.Fails[0].Guards[1].Atoms[0].String() != "!tls.cert" {
		t.Errorf("fails = %+v", g.Fails)
	}
	for path, set := range map[string]map[string]bool{
		"tls.secretName":  g.Printed,
		"tls.extra.*":     g.Printed,
		"tls.extra":       g.Ranged,
		"tls.annotations": g.Mapped,
		"extraObjects.*":  g.Templated,
	} {
		if !set[path] {
			t.Errorf("%s not noted", path)
		}
	}
	if g.Passthrough["extraObjects"] != "c/templates/t.yaml" {
		t.Errorf("passthrough = %v", g.Passthrough)
	}
}
