package crdschema

import (
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/chartpilot/chartpilot/chart"
)

// TestSchemaAsWideAsTheChart: values that land where the Kubernetes API
// takes an integer or a string are int-or-string, quantities any scalar,
// "" read as a number open with a warning, every field nullable (a string
// enum a pattern, which the API server does not check on null), and a
// chart that renders values with tpl keeps unknown fields.
func TestSchemaAsWideAsTheChart(t *testing.T) {
	widths, widthsWarnings := localCRD(t, "widths")
	parent, _ := localCRD(t, "schemaparent")
	tests := []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		// want is the schema as JSON.
		want string
	}{
		{name: "integer default landing in a targetPort", schema: prop(widths, "service", "targetPort"),
			want: `{"description":"Where the Service sends traffic: a container port's number or name.","nullable":true,"x-kubernetes-int-or-string":true}`},
		{name: "integer default landing in a Service port stays an integer", schema: prop(widths, "service", "port"), want: `{"type":"integer","nullable":true}`},
		{name: "string default landing in maxSurge", schema: prop(widths, "surge"),
			want: `{"description":"Rolling update surge, as the Deployment takes it.","nullable":true,"x-kubernetes-int-or-string":true}`},
		{name: "minAvailable in an if, maxUnavailable with a null default", schema: prop(widths, "pdb"),
			want: `{"type":"object","properties":{"maxUnavailable":{"nullable":true,"x-kubernetes-preserve-unknown-fields":true},"minAvailable":{"description":"An integer or a percentage.","nullable":true,"x-kubernetes-int-or-string":true}},"nullable":true}`},
		{name: "a port by name in a probe", schema: prop(widths, "probe", "port"),
			want: `{"description":"The container port the probe checks, by name.","nullable":true,"x-kubernetes-int-or-string":true}`},
		{name: "a cpu quantity", schema: prop(widths, "cpu"), want: `{"description":"CPU and memory of the container.","nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "a memory quantity, quoted", schema: prop(widths, "memory"), want: `{"nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "an integer elsewhere", schema: prop(widths, "replicaCount"), want: `{"type":"integer","nullable":true}`},
		{name: "tpl keeps the top level's unknown fields", schema: apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: widths.XPreserveUnknownFields},
			want: `{"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "a nullable string enum of values.schema.json is a pattern", schema: prop(parent, "level"),
			want: `{"type":"string","pattern":"^(?:low|high)$","nullable":true}`},
		{name: "the parent's values.yaml gives a subchart with null values.yaml its fields", schema: prop(parent, "first", "service", "port"),
			want: `{"type":"integer","nullable":true}`},
		{name: "a subchart with an empty values.yaml takes any value", schema: prop(parent, "second"),
			want: `{"description":"Values of the second subchart.","type":"object","nullable":true,"x-kubernetes-preserve-unknown-fields":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSchema(t, tt.schema, tt.want, nil, nil)
		})
	}
	for _, want := range []string{
		"chart widths: templates/deployment.yaml renders values with tpl, whose templates may read values of any name: the CRD keeps fields values.yaml does not declare in spec",
		`chart widths: templates/deployment.yaml reads .Values.initialDelay as a number, but its default is "": the CRD accepts any value there`,
	} {
		if !strings.Contains(strings.Join(widthsWarnings, "\n"), want) {
			t.Errorf("no warning %q in %q", want, widthsWarnings)
		}
	}
}

// TestAdmitGivenValues: values given besides values.yaml (--values, --set)
// open the schema where it would refuse or prune them, each with a warning.
func TestAdmitGivenValues(t *testing.T) {
	c, err := chart.Load(filepath.Join("testdata", "charts", "widths"))
	if err != nil {
		t.Fatal(err)
	}
	c.Values = map[string]any{"replicaCount": "two", "service": map[string]any{"port": 80, "extra": true}, "pdb": nil, "cpu": 1}
	s, warnings, err := Spec(c)
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, prop(*s, "replicaCount"), `{"x-kubernetes-preserve-unknown-fields":true}`, nil, nil)
	checkSchema(t, prop(*s, "service", "port"), `{"type":"integer"}`, nil, nil)
	checkSchema(t, prop(*s, "service", "extra"), `{"x-kubernetes-preserve-unknown-fields":true}`, nil, nil)
	for _, want := range []string{
		"chart widths: the values given set .Values.replicaCount to a string, where the chart's values make it an integer: the CRD accepts any value there",
		"chart widths: the values given set .Values.service.extra, which the chart does not declare: the CRD accepts any value there",
	} {
		if !strings.Contains(strings.Join(texts(warnings), "\n"), want) {
			t.Errorf("no warning %q in %q", want, warnings)
		}
	}
}
