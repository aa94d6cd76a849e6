package crdschema

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/chartpilot/chartpilot/chart"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

func chartDir(name string) string { return filepath.Join("..", "chart", "testdata", "charts", name) }

// crdFor builds the CRD of a test chart and checks it the way the API
// server does when it is created (structural schema included).
func crdFor(t *testing.T, name string) (*chart.Chart, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	c, err := chart.Load(chartDir(name))
	if err != nil {
		t.Fatal(err)
	}
	crd, _, err := CRD(c, Options{Group: "charts.example.com", Version: "v1alpha1", Kind: "Thing"})
	if err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		t.Fatalf("the API server would refuse the CRD of %s: %v", name, errs.ToAggregate())
	}
	return c, crd
}

// validate validates a CR's object against the CRD's schema.
func validate(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) field.ErrorList {
	t.Helper()
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	v, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	return validation.ValidateCustomResource(nil, obj, v)
}

// cr is a custom resource with the given spec, as JSON decodes it.
func cr(t *testing.T, spec any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "charts.example.com/v1alpha1", "kind": "Thing",
		"metadata": map[string]any{"name": "x"}, "spec": spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSampleAndCRsValidate(t *testing.T) {
	tests := []struct {
		chart string
		spec  map[string]any
		// wantErr is a substring of the validation error; empty means valid.
		wantErr string
	}{
		// The chart's own defaults, which operator-sdk puts in the sample CR.
		{chart: "webapp", spec: nil},
		{chart: "umbrella", spec: nil},
		{chart: "widgets", spec: nil},
		{chart: "clusterwide", spec: nil},
		{chart: "validated", spec: nil},
		{chart: "legacy", spec: nil},
		// Permissive where values.yaml says nothing.
		{chart: "webapp", spec: map[string]any{
			"podLabels":    map[string]any{"team": "a"},
			"env":          []any{map[string]any{"name": "A", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}},
			"resources":    map[string]any{"limits": map[string]any{"cpu": "100m"}},
			"nodeSelector": map[string]any{"disk": "ssd"},
			"ratio":        1,
			"replicaCount": 2,
		}},
		// Empty defaults prove no type: a list where values.yaml has {}.
		{chart: "webapp", spec: map[string]any{"podLabels": []any{"a"}, "resources": "none", "image": map[string]any{"tag": 3}}},
		{chart: "webapp", spec: map[string]any{"nodeSelector": nil}},
		{chart: "umbrella", spec: map[string]any{"cache": map[string]any{"port": 7000, "pdb": map[string]any{"enabled": true}}, "global": map[string]any{"x": 1}}},
		// Rejected: wrong types where values.yaml is clear.
		{chart: "webapp", spec: map[string]any{"replicaCount": "three"}, wantErr: "spec.replicaCount"},
		{chart: "webapp", spec: map[string]any{"replicaCount": 2.5}, wantErr: "spec.replicaCount"},
		{chart: "webapp", spec: map[string]any{"image": "nginx"}, wantErr: "spec.image"},
		{chart: "webapp", spec: map[string]any{"autoscaling": map[string]any{"enabled": "yes"}}, wantErr: "spec.autoscaling.enabled"},
		{chart: "umbrella", spec: map[string]any{"cache": map[string]any{"port": "redis"}}, wantErr: "spec.cache.port"},
		// values.schema.json's rules.
		{chart: "validated", spec: map[string]any{"replicas": 0}, wantErr: "spec.replicas"},
		{chart: "validated", spec: map[string]any{"mode": "reckless"}, wantErr: "spec.mode"},
		{chart: "validated", spec: map[string]any{"tags": []any{1}}, wantErr: "spec.tags[0]"},
		{chart: "validated", spec: map[string]any{"mode": "safe"}},
	}
	for _, tt := range tests {
		name := tt.chart
		if tt.spec != nil {
			raw, _ := json.Marshal(tt.spec)
			name += " " + string(raw)
		}
		t.Run(name, func(t *testing.T) {
			c, crd := crdFor(t, tt.chart)
			spec := tt.spec
			if spec == nil {
				spec = c.Helm.Values
			}
			errs := validate(t, crd, cr(t, spec))
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Errorf("rejected: %v", errs.ToAggregate())
			case tt.wantErr != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.wantErr)):
				t.Errorf("errors = %v, want one about %s", errs.ToAggregate(), tt.wantErr)
			}
		})
	}
}

// prop walks a schema's properties.
func prop(s apiextensionsv1.JSONSchemaProps, path ...string) apiextensionsv1.JSONSchemaProps {
	for _, p := range path {
		s = s.Properties[p]
	}
	return s
}

func TestInferredSchema(t *testing.T) {
	_, webapp := crdFor(t, "webapp")
	_, umbrella := crdFor(t, "umbrella")
	spec := func(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.JSONSchemaProps {
		return prop(*crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "spec")
	}
	preserve := func(s apiextensionsv1.JSONSchemaProps) bool {
		return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	}
	tests := []struct {
		name        string
		schema      apiextensionsv1.JSONSchemaProps
		typ, desc   string
		freeForm    bool
		intOrString bool
		properties  []string
	}{
		{name: "whole number is integer", schema: prop(spec(webapp), "replicaCount"), typ: "integer", desc: "Number of pods when autoscaling is off."},
		{name: "float is number", schema: prop(spec(webapp), "ratio"), typ: "number", desc: "A ratio used by the application."},
		// Printed within the image's text: an integer prints as well.
		{name: "nested description", schema: prop(spec(webapp), "image", "repository"), intOrString: true, desc: "Container image repository."},
		{name: "empty string is anything", schema: prop(spec(webapp), "image", "tag"), freeForm: true, desc: "Image tag; the chart's appVersion when empty."},
		{name: "nested object is structured", schema: prop(spec(webapp), "config"), typ: "object", desc: "Settings written to the application's ConfigMap.", properties: []string{"greeting", "logLevel"}},
		{name: "empty map is anything", schema: prop(spec(webapp), "podLabels"), desc: "Extra labels on every pod (free-form).", freeForm: true},
		{name: "toYaml'd value is free-form", schema: prop(spec(webapp), "resources"), freeForm: true, desc: "Resource requests and limits of the container."},
		{name: "null is anything", schema: prop(spec(webapp), "nodeSelector"), freeForm: true, desc: "Node selector of the pods; null means none."},
		{name: "empty list is anything", schema: prop(spec(webapp), "env"), freeForm: true, desc: "Extra environment variables, as a list of {name, value}."},
		{name: "subchart values under its key", schema: prop(spec(umbrella), "cache"), typ: "object", desc: "", properties: []string{"enabled", "pdb", "port", "replicas"}},
		{name: "subchart's own description", schema: prop(spec(umbrella), "cache", "port"), typ: "integer", desc: "Port of the cache."},
		{name: "parent overrides subchart", schema: prop(spec(umbrella), "cache", "replicas"), typ: "integer", desc: "Cache replicas."},
		{name: "global for subcharts", schema: prop(spec(umbrella), "global"), typ: "object", freeForm: true, desc: "Values shared with every subchart."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.schema
			if s.Type != tt.typ || s.Description != tt.desc || preserve(s) != tt.freeForm || s.XIntOrString != tt.intOrString {
				t.Errorf("got type %q, description %q, free-form %t, int-or-string %t; want %q, %q, %t, %t",
					s.Type, s.Description, preserve(s), s.XIntOrString, tt.typ, tt.desc, tt.freeForm, tt.intOrString)
			}
			if tt.properties != nil {
				var got []string
				for k := range s.Properties {
					got = append(got, k)
				}
				sortStrings(got)
				if !reflect.DeepEqual(got, tt.properties) {
					t.Errorf("properties = %q, want %q", got, tt.properties)
				}
			}
		})
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestFromJSONSchema(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		defaults map[string]any
		// want is the converted schema as JSON.
		want     string
		warnings []string
	}{{
		name:   "types, nullable and int-or-string",
		schema: `{"type":"object","additionalProperties":false,"properties":{"a":{"type":["string","null"]},"b":{"type":["integer","string"]}}}`,
		want:   `{"type":"object","properties":{"a":{"type":"string","nullable":true},"b":{"x-kubernetes-int-or-string":true}}}`,
	}, {
		name:     "required with a default is not required of the CR",
		schema:   `{"type":"object","required":["a","b"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`,
		defaults: map[string]any{"a": 1},
		want:     `{"type":"object","required":["b"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"x-kubernetes-preserve-unknown-fields":true}`,
	}, {
		name:   "local $ref inlined",
		schema: `{"type":"object","additionalProperties":false,"definitions":{"port":{"type":"integer","minimum":1,"maximum":65535}},"properties":{"http":{"$ref":"#/definitions/port","description":"HTTP port"}}}`,
		want:   `{"type":"object","properties":{"http":{"description":"HTTP port","type":"integer","maximum":65535,"minimum":1}}}`,
	}, {
		name:     "number or string is free-form: int-or-string refuses 1.5",
		schema:   `{"type":"object","additionalProperties":false,"properties":{"a":{"type":["number","string"]}}}`,
		want:     `{"type":"object","properties":{"a":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"#/properties/a: type [number string] cannot be expressed in a CRD"},
	}, {
		name:     "a pattern Go cannot compile is left to Helm",
		schema:   `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","pattern":"^(?!tmp)"}}}`,
		want:     `{"type":"object","properties":{"a":{"type":"string"}}}`,
		warnings: []string{"#/properties/a: pattern \"^(?!tmp)\" is not carried into the CRD"},
	}, {
		name:     "a fractional multipleOf is left to Helm",
		schema:   `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"number","multipleOf":0.1},"b":{"type":"integer","multipleOf":5}}}`,
		want:     `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer","multipleOf":5}}}`,
		warnings: []string{"#/properties/a: multipleOf 0.1 is not carried into the CRD"},
	}, {
		name:     "an unknown type is free-form",
		schema:   `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"text"}}}`,
		want:     `{"type":"object","properties":{"a":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"#/properties/a: type \"text\" is not a JSON Schema type"},
	}, {
		name:     "composition becomes free-form with a warning",
		schema:   `{"type":"object","additionalProperties":false,"properties":{"x":{"anyOf":[{"type":"string"},{"type":"boolean"}]}}}`,
		want:     `{"type":"object","properties":{"x":{"x-kubernetes-preserve-unknown-fields":true}}}`,
		warnings: []string{"#/properties/x: anyOf is not carried into the CRD"},
	}, {
		name:   "map of strings",
		schema: `{"type":"object","additionalProperties":false,"properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		want:   `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`,
	}, {
		name:   "unique scalar items are a set",
		schema: `{"type":"object","additionalProperties":false,"properties":{"tags":{"type":"array","uniqueItems":true,"items":{"type":"string","enum":["a","b"]}}}}`,
		want:   `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"x-kubernetes-list-type":"set"}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, warnings, err := FromJSONSchema([]byte(tt.schema), tt.defaults)
			if err != nil {
				t.Fatal(err)
			}
			checkSchema(t, s, tt.want, warnings, tt.warnings)
		})
	}
}

// TestFromJSONSchemaBounded: $refs that refer to each other many times
// over do not multiply without end (this one would make 3^16 copies).
func TestFromJSONSchemaBounded(t *testing.T) {
	schema := `{"properties":{"a":{"$ref":"#/definitions/n"},"b":{"$ref":"#/definitions/n"},"c":{"$ref":"#/definitions/n"}},
		"definitions":{"n":{"properties":{"a":{"$ref":"#/definitions/n"},"b":{"$ref":"#/definitions/n"},"c":{"$ref":"#/definitions/n"}}}}}`
	start := time.Now()
	s, warnings, err := FromJSONSchema([]byte(schema), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 1<<20 {
		t.Errorf("the schema is %d bytes", len(data))
	}
	if len(warnings) > 3 || !strings.Contains(strings.Join(texts(warnings), "\n"), "is not inlined") {
		t.Errorf("warnings %q, want a few, one that says a $ref is not inlined", warnings)
	}
}

func TestFromJSONSchemaErrors(t *testing.T) {
	for _, schema := range []string{`{`, `{"properties":{"a":{"$ref":"#/definitions/missing"}}}`, `{"properties":{"a":{"$ref":"other.json#/x"}}}`} {
		if _, _, err := FromJSONSchema([]byte(schema), nil); err == nil {
			t.Errorf("FromJSONSchema(%s) succeeded", schema)
		}
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{"Webapp": "webapps", "Redis": "redises", "Policy": "policies", "Gateway": "gateways", "Box": "boxes"} {
		if got := Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

// localCRD builds the CRD of a chart of this package's testdata, with its
// warnings.
func localCRD(t *testing.T, name string) (apiextensionsv1.JSONSchemaProps, []string) {
	t.Helper()
	c, err := chart.Load(filepath.Join("testdata", "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	crd, warnings, err := CRD(c, Options{Group: "charts.example.com", Version: "v1alpha1", Kind: "Thing"})
	if err != nil {
		t.Fatal(err)
	}
	return prop(*crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "spec"), texts(warnings)
}

func TestUndeclaredValuesConditionsAndTags(t *testing.T) {
	helpers, helperWarnings := localCRD(t, "helpers")
	stack, stackWarnings := localCRD(t, "stack")
	tests := []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		// want is the schema as JSON.
		want string
	}{
		{name: "a helper's default", schema: prop(helpers, "nameOverride"), want: `{"nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "read through a variable", schema: prop(helpers, "serviceAccount"), want: `{"nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "empty default used as a list", schema: prop(helpers, "tolerations"), want: `{"description":"Tolerations of the pods.","nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "ranged map", schema: prop(helpers, "extraEnv"), want: `{"description":"Extra environment variables, by name.","nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "whole number", schema: prop(helpers, "probePeriodSeconds"), want: `{"description":"Seconds between liveness probes.","type":"integer","nullable":true}`},
		{name: "fraction", schema: prop(helpers, "sampleRatio"), want: `{"description":"Share of traffic to sample, 0 to 1.","type":"number","nullable":true}`},
		{name: "undescribed after a commented-out example", schema: prop(helpers, "image", "pullPolicy"), want: `{"type":"string","nullable":true}`},
		{name: "condition", schema: prop(stack, "db", "enabled"), want: `{"description":"Whether the db subchart is installed (its condition in Chart.yaml).","type":"boolean","nullable":true}`},
		{name: "tag", schema: prop(stack, "tags"), want: `{"type":"object","properties":{"backend":{"description":"Whether the subcharts tagged backend are installed, unless their conditions say otherwise.","type":"boolean","nullable":true}},"nullable":true}`},
		{name: "subchart's undeclared value", schema: prop(stack, "db", "persistence"), want: `{"nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSchema(t, tt.schema, tt.want, nil, nil)
		})
	}
	wantWarnings := []string{
		"chart helpers: templates/_helpers.tpl reads .Values.commonLabels, which values.yaml does not declare: the CRD accepts any value there",
		"chart helpers: templates/_helpers.tpl reads .Values.fullnameOverride, which values.yaml does not declare: the CRD accepts any value there",
		"chart helpers: templates/_helpers.tpl reads .Values.nameOverride, which values.yaml does not declare: the CRD accepts any value there",
		"chart helpers: templates/deployment.yaml reads .Values.probe, which values.yaml does not declare: the CRD accepts any value there",
		"chart helpers: templates/_helpers.tpl reads .Values.serviceAccount, which values.yaml does not declare: the CRD accepts any value there",
		"chart stack: Chart.yaml's condition of dependency db reads .Values.db.enabled, which values.yaml does not declare: the CRD accepts a boolean there",
		"chart stack: charts/db/templates/statefulset.yaml reads .Values.db.persistence, which values.yaml does not declare: the CRD accepts any value there",
		"chart stack: Chart.yaml's tag backend of dependency db is read from .Values.tags.backend, which values.yaml does not declare: the CRD accepts a boolean there",
	}
	if got := append(helperWarnings, stackWarnings...); strings.Join(got, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

// A library chart's helpers run in the including chart's context: the
// values they read are the parent's.
func TestLibraryHelpersReadTheParentsValues(t *testing.T) {
	lib := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "common", Version: "1.0.0", Type: "library"},
		Templates: []*helmcommon.File{{Name: "templates/_names.tpl", Data: []byte(`{{ define "common.name" }}{{ default .Chart.Name .Values.nameOverride }}{{ end }}`)}}}
	parent := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "app", Version: "1.0.0",
		Dependencies: []*helmchart.Dependency{{Name: "common", Version: "1.0.0"}}},
		Raw:       []*helmcommon.File{{Name: "values.yaml", Data: []byte("replicas: 1\n")}},
		Templates: []*helmcommon.File{{Name: "templates/cm.yaml", Data: []byte(`name: {{ include "common.name" . }}`)}}}
	parent.AddDependency(lib)
	s, warnings, err := Spec(&chart.Chart{Helm: parent})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Properties["nameOverride"]; !ok {
		t.Errorf("nameOverride is not in the schema: %v", s.Properties)
	}
	want := "chart app: charts/common/templates/_names.tpl reads .Values.nameOverride, which values.yaml does not declare"
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0].Text, want) {
		t.Errorf("warnings = %q, want %q...", warnings, want)
	}
}

// checkSchema compares a schema, as JSON, with want, and warnings with the
// prefixes in wantWarnings, one to one.
func checkSchema(t *testing.T, s any, want string, warnings []Warning, wantWarnings []string) {
	t.Helper()
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("schema:\n got %s\nwant %s", got, want)
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings = %q, want %q", warnings, wantWarnings)
	}
	for i, w := range warnings {
		if !strings.HasPrefix(w.Text, wantWarnings[i]) {
			t.Errorf("warning %q, want %q...", w.Text, wantWarnings[i])
		}
		if w.Kind == 0 || w.At == "" || !strings.Contains(w.Text, strings.TrimPrefix(w.At, ".Values.")) {
			t.Errorf("warning %q: kind %d at %q, want its kind and the place it names", w.Text, w.Kind, w.At)
		}
	}
}

// texts are the warnings' texts.
func texts(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}
