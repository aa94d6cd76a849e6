package crdschema

import (
	"sort"
	"strings"
	"testing"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// usesOf parses templates (file name -> text) and lists "path use" lines,
// uses spelled r (read), o (map), f (free-form), g (ranged), k (any key),
// i (int-or-string field), p (port), q (quantity), n (number), N (number
// default), S (string default).
func usesOf(t *testing.T, templates map[string]string) []string {
	t.Helper()
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "t"}}
	for name, text := range templates {
		ch.Templates = append(ch.Templates, &helmcommon.File{Name: name, Data: []byte(text)})
	}
	u, err := TemplateUsage(ch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range u.Sorted() {
		if len(p.Path) == 0 {
			if p.Use&^(UseRead|UseObject) == 0 {
				continue // .Values itself, read for its fields
			}
		}
		out = append(out, p.Dotted()+" "+useLetters(p.Use))
	}
	sort.Strings(out)
	return out
}

func useLetters(u Use) string {
	var b strings.Builder
	for _, l := range []struct {
		use Use
		c   byte
	}{{UseRead, 'r'}, {UseObject, 'o'}, {UseFree, 'f'}, {UseRange, 'g'}, {UseAnyKey, 'k'}, {UseIntOrString, 'i'},
		{UsePort, 'p'}, {UseQuantity, 'q'}, {UseNumber, 'n'}, {UseNumberDefault, 'N'}, {UseStringDefault, 'S'}} {
		if u&l.use != 0 {
			b.WriteByte(l.c)
		}
	}
	return b.String()
}

func TestTemplateUsage(t *testing.T) {
	tests := []struct {
		name string
		text string
		// want lists "path uses", sorted.
		want []string
	}{{
		name: "fields and nesting",
		text: `{{ .Values.a.b }}{{ .Chart.Name }}{{ .Release.Name }}`,
		want: []string{"a ro", "a.b r"},
	}, {
		name: "default in a helper",
		text: `{{- define "x.name" -}}{{ default .Chart.Name .Values.nameOverride | trunc 63 }}{{- end -}}`,
		want: []string{"nameOverride r"},
	}, {
		name: "piped default keeps the path",
		text: `{{ .Values.a.b | default "x" | quote }}`,
		want: []string{"a ro", "a.b rS"},
	}, {
		name: "$ and index",
		text: `{{ with .Values.w }}{{ $.Values.top }}{{ index $.Values "my-key" "sub" }}{{ index .list 0 }}{{ end }}`,
		want: []string{"my-key ro", "my-key.sub r", "top r", "w ro", "w.list r", "w.list[] r"},
	}, {
		name: "index with a computed key opens the level",
		text: `{{ range $k, $v := .Values.x }}{{ index $.Values.m $k }}{{ end }}{{ $c := "c" }}{{ index .Values.n $c }}`,
		want: []string{"m rf", "n ro", "n.c r", "x rg"},
	}, {
		name: "toYaml with and pipe",
		text: `{{ with .Values.tolerations }}{{ toYaml . }}{{ end }}{{ .Values.resources | toYaml | nindent 2 }}{{ toJson .Values.j }}`,
		want: []string{"j rf", "resources rf", "tolerations rf"},
	}, {
		name: "include and tpl pass values through",
		text: `{{ include "x" .Values.sub }}{{ include "x" . }}{{ tpl .Values.t . }}{{ template "y" .Values.tt }}`,
		want: []string{"(tpl) k", "sub rf", "t rf", "tt rf"},
	}, {
		name: "range rebinds dot to elements",
		text: `{{ range .Values.env }}{{ .name }}{{ end }}{{ range $k, $v := .Values.labels }}{{ $k }}={{ $v }}{{ end }}`,
		want: []string{"env rg", "env[] ro", "env[].name r", "labels rg", "labels[] r"},
	}, {
		name: "variables",
		text: `{{ $c := .Values.cfg }}{{ if $c.on }}{{ $c.port }}{{ end }}{{ $x := .Values.a }}{{ if .Values.b }}{{ $x = .Values.b }}{{ end }}{{ $x.f }}`,
		want: []string{"a ro", "a.f r", "b ro", "b.f r", "cfg ro", "cfg.on r", "cfg.port r"},
	}, {
		name: "with else keeps the outer dot",
		text: `{{ with .Values.a }}{{ .x }}{{ else }}{{ .Values.b }}{{ end }}`,
		want: []string{"a ro", "a.x r", "b r"},
	}, {
		name: "or passes either through",
		text: `{{ toYaml (or .Values.a .Values.b) }}`,
		want: []string{"a rf", "b rf"},
	}, {
		name: "the whole values",
		text: `{{ toYaml .Values }}`,
		want: []string{" rf"},
	}, {
		name: "hasKey, dig and get",
		text: `{{ if hasKey .Values.m "k" }}{{ dig "x" "y" "" .Values.d }}{{ get .Values.g "z" }}{{ end }}`,
		want: []string{"d ro", "d.x ro", "d.x.y r", "g ro", "g.z r", "m ro", "m.k r"},
	}, {
		name: "where values land: int-or-string fields, ports, quantities",
		text: "spec:\n  minAvailable: {{ .Values.pdb.min }}\n  ports:\n  - port: {{ .Values.svc.port }}\n    targetPort: {{ .Values.svc.target | quote }}\n" +
			"  livenessProbe:\n    httpGet:\n      port: {{ .Values.probe.port }}\n  resources:\n    requests:\n      nvidia.com/gpu: {{ .Values.gpus }}\n" +
			"      cpu: {{ default \"100m\" .Values.cpu }}\n  replicas: {{ .Values.replicas }}\n  name: x-{{ .Values.suffix }}\n" +
			"{{- with .Values.pdb.max }}\n  maxUnavailable: {{ . }}\n{{- end }}",
		want: []string{"cpu rqS", "gpus rq", "pdb ro", "pdb.max ri", "pdb.min ri", "probe ro", "probe.port ri", "replicas r", "suffix r", "svc ro", "svc.port rp", "svc.target ri"},
	}, {
		name: "numbers: computed with, compared, defaulted",
		text: `{{ if gt (.Values.replicas | int) 1 }}{{ add .Values.a 1 }}{{ end }}{{ .Values.b | default 3 }}{{ default "x" .Values.c }}{{ default "" .Values.d }}`,
		want: []string{"a rn", "b rN", "c rS", "d r", "replicas rn"},
	}, {
		name: "keys of a map are data",
		text: `{{ range keys .Values.annotations }}{{ . }}{{ end }}`,
		want: []string{"annotations rg"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := usesOf(t, map[string]string{"templates/x.yaml": tt.text})
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("uses:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestTemplateUsageParseError(t *testing.T) {
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "t"},
		Templates: []*helmcommon.File{{Name: "templates/bad.yaml", Data: []byte(`{{ nosuchfunc .Values.a }}`)}}}
	_, err := TemplateUsage(ch)
	if err == nil || !strings.Contains(err.Error(), "templates/bad.yaml") {
		t.Fatalf("err = %v, want one naming templates/bad.yaml", err)
	}
}
