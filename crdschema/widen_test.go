package crdschema

import (
	"testing"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

func TestWiden(t *testing.T) {
	tests := []struct {
		name, values, template string
		// want is the widened schema as JSON.
		want string
		// warnings are prefixes of the warnings, in order.
		warnings []string
	}{{
		name:     "undeclared value read by a helper",
		values:   "replicas: 1",
		template: `{{ default .Chart.Name .Values.nameOverride }}{{ .Values.replicas }}`,
		want:     `{"type":"object","properties":{"nameOverride":{"x-kubernetes-preserve-unknown-fields":true},"replicas":{"type":"integer"}}}`,
		warnings: []string{"chart t: templates/x.yaml reads .Values.nameOverride, which values.yaml does not declare"},
	}, {
		name:     "undeclared below a declared map",
		values:   "image:\n  repository: x",
		template: "repository: {{ .Values.image.repository }}\ntag: {{ .Values.image.tag | default \"latest\" }}",
		want:     `{"type":"object","properties":{"image":{"type":"object","properties":{"repository":{"type":"string"},"tag":{"x-kubernetes-preserve-unknown-fields":true}}}}}`,
		warnings: []string{"chart t: templates/x.yaml reads .Values.image.tag, which"},
	}, {
		// A string only printed as text takes the integers YAML users
		// write (tag: 15) too: Helm prints them the same.
		name:     "a string printed within text",
		values:   "tag: \"1.0\"",
		template: `image: "repo:{{ .Values.tag }}"`,
		want:     `{"type":"object","properties":{"tag":{"x-kubernetes-int-or-string":true}}}`,
	}, {
		name:     "a string printed formatted",
		values:   "version: \"1.0\"\nname: app",
		template: "version: {{ .Values.version | quote }}\nname: {{ printf \"%s-x\" .Values.name }}",
		want:     `{"type":"object","properties":{"name":{"x-kubernetes-int-or-string":true},"version":{"x-kubernetes-int-or-string":true}}}`,
	}, {
		// The whole value of a field: an integer would make the field an
		// integer, which a string field of the object refuses.
		name:     "a string printed bare as a field's value",
		values:   "policy: Always",
		template: `imagePullPolicy: {{ .Values.policy }}`,
		want:     `{"type":"object","properties":{"policy":{"type":"string"}}}`,
	}, {
		// upper, eq and the like fail on an integer.
		name:     "a string a function takes as a string",
		values:   "name: app\nmode: fast",
		template: "x: \"{{ .Values.name | upper }}\"\n{{ if eq .Values.mode \"fast\" }}y: 1{{ end }}",
		want:     `{"type":"object","properties":{"mode":{"type":"string"},"name":{"type":"string"}}}`,
	}, {
		name:     "undeclared nesting warns once",
		values:   "a: 1",
		template: `{{ .Values.ingress.tls.secret }}{{ .Values.ingress.host }}`,
		want:     `{"type":"object","properties":{"a":{"type":"integer"},"ingress":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"chart t: templates/x.yaml reads .Values.ingress, which"},
	}, {
		name:     "free-form map keeps its keys as documentation only",
		values:   "resources:\n  limits:\n    cpu: 100m",
		template: `{{ toYaml .Values.resources }}`,
		want:     `{"type":"object","properties":{"resources":{"type":"object","properties":{"limits":{"type":"object","properties":{"cpu":{"x-kubernetes-preserve-unknown-fields":true}},"x-kubernetes-preserve-unknown-fields":true}},"x-kubernetes-preserve-unknown-fields":true}}}`,
	}, {
		name:     "free-form list has any items",
		values:   "args: [a]",
		template: `{{ toYaml .Values.args }}`,
		want:     `{"type":"object","properties":{"args":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}}}`,
	}, {
		name:     "ranged map keeps unknown keys",
		values:   "env:\n  A: x",
		template: `{{ range $k, $v := .Values.env }}{{ $k }}={{ $v }}{{ end }}`,
		want:     `{"type":"object","properties":{"env":{"type":"object","properties":{"A":{"type":"string"}},"x-kubernetes-preserve-unknown-fields":true}}}`,
	}, {
		name:     "a scalar used as a map",
		values:   "db: postgres",
		template: `{{ .Values.db.host }}{{ toYaml .Values.db }}`,
		want:     `{"type":"object","properties":{"db":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"chart t: templates/x.yaml uses .Values.db as a map, which values.yaml makes a string"},
	}, {
		name:     "elements of a declared list",
		values:   "ports: [80]",
		template: `{{ range .Values.ports }}{{ .number }}{{ end }}`,
		want:     `{"type":"object","properties":{"ports":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}}}`,
		warnings: []string{"chart t: templates/x.yaml uses .Values.ports[] as a map, which values.yaml makes an integer"},
	}, {
		name:     "empty defaults stay open whatever the use",
		values:   "tolerations: {}\nlabels: {}",
		template: `{{ with .Values.tolerations }}{{ toYaml . }}{{ end }}{{ .Values.labels.team }}`,
		want:     `{"type":"object","properties":{"labels":{"x-kubernetes-preserve-unknown-fields":true},"tolerations":{"x-kubernetes-preserve-unknown-fields":true}}}`,
	}, {
		name:     "a scalar ranged over",
		values:   "hosts: a.example.com",
		template: `{{ range .Values.hosts }}{{ . }}{{ end }}`,
		want:     `{"type":"object","properties":{"hosts":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"chart t: templates/x.yaml uses .Values.hosts as a list or map (range), which values.yaml makes a string"},
	}, {
		name:     "the whole values handed on",
		values:   "a: 1",
		template: `{{ toYaml .Values }}`,
		want:     `{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-preserve-unknown-fields":true}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromValuesYAML([]byte(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "t"},
				Templates: []*helmcommon.File{{Name: "templates/x.yaml", Data: []byte(tt.template)}}}
			u, err := TemplateUsage(ch)
			if err != nil {
				t.Fatal(err)
			}
			warnings := Widen(s, u, "t")
			checkSchema(t, s, tt.want, warnings, tt.warnings)
		})
	}
}
