package crdschema

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/chartpilot/chartpilot/internal/fuzzseed"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// The fuzz targets of the chart-to-schema conversion. Each seeds from the
// test charts and checks what the README promises of the result: the API
// server takes the CRD (a structural schema), and the CRD keeps what the
// chart accepts.

// seedFiles adds every file called name under the test charts' directories.
func seedFiles(f *testing.F, name string) {
	f.Helper()
	fuzzseed.Files(f,
		filepath.Join("testdata", "charts", "*", name),
		filepath.Join("..", "chart", "testdata", "charts", "*", name),
		filepath.Join("..", "chart", "testdata", "charts", "*", "charts", "*", name))
}

// crdOf wraps spec in a CRD and returns what the API server's validation of
// a new CRD says of it.
func crdOf(t *testing.T, spec *apiextensionsv1.JSONSchemaProps) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", ListKind: "ThingList", Plural: "things", Singular: "thing"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *spec},
				}},
			}},
		},
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		return errs.ToAggregate().Error()
	}
	return ""
}

// specErrors validates a CR's spec (as JSON decodes it) against spec.
func specErrors(t *testing.T, spec *apiextensionsv1.JSONSchemaProps, value any) string {
	t.Helper()
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(spec, &internal, nil); err != nil {
		t.Fatal(err)
	}
	v, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidateCustomResource(nil, jsonCopy(t, value), v); len(errs) > 0 {
		return errs.ToAggregate().Error()
	}
	return ""
}

// jsonCopy is v as it reaches the API server in a CR: through JSON, read
// back the way the API server reads it (whole numbers within int64 are
// integers).
func jsonCopy(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzFromValuesYAML: the schema inferred from a values.yaml is one the API
// server takes, and it accepts the chart's own defaults as Helm reads them
// (a CR that copies values.yaml into its spec is valid).
func FuzzFromValuesYAML(f *testing.F) {
	seedFiles(f, "values.yaml")
	for _, s := range []string{
		"a: 1\nb: 0.5\nc: [1, 2.5]\nd: {}\ne: []\nf: null\ng: \"\"\nh: '1'\n",
		"base: &b {x: 1}\nc:\n  <<: *b\n  y: true\n",
		"# Pods to run.\nreplicas: 1 # at least one\nimage:\n  # tag: latest\n  repository: nginx\n",
		"list:\n- name: a\n  port: 80\n- name: b\n  port: 81.5\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := FromValuesYAML(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "values.yaml: ") {
				t.Fatalf("the error does not name values.yaml: %v", err)
			}
			return
		}
		if msg := crdOf(t, s); msg != "" {
			t.Fatalf("the API server refuses the CRD inferred from\n%s\n: %s", data, msg)
		}
		vals, err := helmcommon.ReadValues(data)
		if err != nil {
			return // Helm cannot read the chart: nothing to keep
		}
		if msg := specErrors(t, s, vals.AsMap()); msg != "" {
			t.Fatalf("the CRD refuses the chart's own values\n%s\n: %s", data, msg)
		}
	})
}

// FuzzFromJSONSchema: a values.schema.json converts in bounded time to a
// schema the API server takes, and a spec Helm's validation of the chart
// accepts, the CRD accepts too.
func FuzzFromJSONSchema(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "chart", "testdata", "charts", "*", "values.schema.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte(`{"replicas":2,"mode":"fast","tags":["a"]}`))
	}
	for _, s := range [][2]string{
		{`{"type":"object","properties":{"a":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"integer","minimum":0}}}`, `{"a":1}`},
		{`{"type":"object","properties":{"n":{"$ref":"#"}}}`, `{"n":{"n":{}}}`},
		{`{"properties":{"a":{"type":["string","null"]},"b":{"type":["integer","string"]},"c":{"enum":["x",null,1]}}}`, `{"a":null,"b":"1","c":"x"}`},
		{`{"type":"object","additionalProperties":{"type":"string"},"required":["x"]}`, `{"x":"y"}`},
		{`{"type":"object","properties":{"l":{"type":"array","uniqueItems":true,"items":{"type":"string","pattern":"^a"},"maxItems":2}}}`, `{"l":["a","ab"]}`},
		{`{"type":"object","properties":{"o":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, `{"o":1}`},
		{`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"multipleOf":0.5}}}`, `{"n":1.5}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schema, spec []byte) {
		start := time.Now()
		s, _, err := FromJSONSchema(schema, nil)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("converting %d bytes took %s", len(schema), d)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "values.schema.json: ") {
				t.Fatalf("the error does not name values.schema.json: %v", err)
			}
			return
		}
		if msg := crdOf(t, s); msg != "" {
			t.Fatalf("the API server refuses the CRD converted from\n%s\n: %s", schema, msg)
		}
		var value map[string]any
		if json.Unmarshal(spec, &value) != nil || value == nil || strings.Contains(string(schema), "://") {
			return // no spec object (a null one is no values), or a schema Helm may fetch more of
		}
		ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "fuzz"}, Schema: schema}
		if valuesutil.ValidateAgainstSchema(ch, value) != nil {
			return
		}
		if msg := specErrors(t, s, value); msg != "" {
			t.Fatalf("Helm accepts %s under\n%s\nbut the CRD refuses it: %s", spec, schema, msg)
		}
	})
}

// FuzzTemplateUsage: the usage collector reads every template Helm's
// template parser reads, and refuses (naming the file) what it refuses.
func FuzzTemplateUsage(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "charts", "*", "templates", "*"))
	more, _ := filepath.Glob(filepath.Join("..", "chart", "testdata", "charts", "*", "templates", "*"))
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{{ range $k, $v := .Values.env }}{{ $k }}={{ $v.name | quote }}{{ end }}{{ with .Values.a }}{{ .b }}{{ end }}`))
	f.Add([]byte(`{{ define "x" }}{{ .Values.a.b }}{{ end }}{{ include "x" . }}{{ template "x" .Values.c }}{{ toYaml .Values.d | nindent 2 }}`))
	funcs := helmFuncs()
	f.Fuzz(func(t *testing.T, data []byte) {
		_, helmErr := template.New("t.yaml").Funcs(funcs).Parse(string(data))
		ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "t"}, Templates: []*helmcommon.File{{Name: "t.yaml", Data: data}}}
		_, err := TemplateUsage(ch)
		if (helmErr != nil) != (err != nil) {
			t.Fatalf("text/template says %v, TemplateUsage says %v", helmErr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "t.yaml") {
			t.Fatalf("the error does not name the file: %v", err)
		}
	})
}
