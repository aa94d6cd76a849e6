package crdschema

import (
	"fmt"
	"testing"
)

func TestFromValuesYAMLTypes(t *testing.T) {
	tests := []struct {
		name, values string
		// want is the inferred schema as JSON.
		want string
	}{
		{name: "whole number is integer", values: "a: 1", want: `{"type":"object","properties":{"a":{"type":"integer"}}}`},
		{name: "fraction is number", values: "a: 0.5", want: `{"type":"object","properties":{"a":{"type":"number"}}}`},
		{name: "1.0 is written as a number", values: "a: 1.0", want: `{"type":"object","properties":{"a":{"type":"number"}}}`},
		{name: "integers and numbers in a list", values: "a: [1, 2.5]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}}}}`},
		{name: "integers in a list", values: "a: [1, 2]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`},
		{name: "integers and strings in a list", values: "a: [1, x]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"x-kubernetes-int-or-string":true}}}}`},
		{name: "mixed list", values: "a: [1, true]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}}}`},
		{name: "quantity field names", values: "resources: {requests: {cpu: 100m, nvidia.com/gpu: 1}}\nmemory: 1Gi", want: `{"type":"object","properties":{"memory":{"x-kubernetes-preserve-unknown-fields":true},"resources":{"type":"object","properties":{"requests":{"type":"object","properties":{"cpu":{"x-kubernetes-preserve-unknown-fields":true},"nvidia.com/gpu":{"x-kubernetes-preserve-unknown-fields":true}}}}}}}`},
		{name: "int-or-string field names", values: "pdb: {maxUnavailable: 1, minAvailable: 50%}\nports: [{targetPort: http}]\nrate: {maxSurge: 0.5}", want: `{"type":"object","properties":{"pdb":{"type":"object","properties":{"maxUnavailable":{"x-kubernetes-int-or-string":true},"minAvailable":{"x-kubernetes-int-or-string":true}}},"ports":{"type":"array","items":{"type":"object","properties":{"targetPort":{"x-kubernetes-int-or-string":true}},"x-kubernetes-preserve-unknown-fields":true}},"rate":{"type":"object","properties":{"maxSurge":{"type":"number"}}}}}`},
		{name: "empty map proves nothing", values: "a: {}", want: `{"type":"object","properties":{"a":{"x-kubernetes-preserve-unknown-fields":true}}}`},
		{name: "empty list proves nothing", values: "a: []", want: `{"type":"object","properties":{"a":{"x-kubernetes-preserve-unknown-fields":true}}}`},
		{name: "empty string proves nothing", values: `a: ""`, want: `{"type":"object","properties":{"a":{"x-kubernetes-preserve-unknown-fields":true}}}`},
		{name: "null proves nothing", values: "a: null", want: `{"type":"object","properties":{"a":{"nullable":true,"x-kubernetes-preserve-unknown-fields":true}}}`},
		{name: "quoted number is a string", values: `a: "1"`, want: `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{name: "list of maps keeps unknown fields", values: "a: [{n: x}]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}},"x-kubernetes-preserve-unknown-fields":true}}}}`},
		{name: "fields of listed maps merge at every depth", values: "a: [{p: 1, l: [1]}, {p: 1.5, l: [true], m: {n: 1}}, {m: {n: 2.5}}]", want: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"l":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}},"m":{"type":"object","properties":{"n":{"type":"number"}}},"p":{"type":"number"}},"x-kubernetes-preserve-unknown-fields":true}}}}`},
		{name: "YAML 1.1 booleans, as Helm reads them", values: "a: yes\nb: off\nc: 'yes'\nd: y", want: `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"},"c":{"type":"string"},"d":{"type":"boolean"}}}`},
		{name: "whole numbers past int64 are numbers", values: "a: 12345678901234567890", want: `{"type":"object","properties":{"a":{"type":"number"}}}`},
		{name: "merge key", values: "base: &b {x: 1}\nc:\n  <<: *b\n  y: true", want: `{"type":"object","properties":{"base":{"type":"object","properties":{"x":{"type":"integer"}}},"c":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"boolean"}}}}}`},
		{name: "empty document", values: "", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "comments only", values: "# nothing to set\n", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "null document, as Helm reads it: no values", values: "null\n", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "~ document", values: "---\n~\n", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromValuesYAML([]byte(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			checkSchema(t, s, tt.want, nil, nil)
		})
	}
}

func TestFromValuesYAMLErrors(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := range "abcdefg" {
		laughs += fmt.Sprintf("%c: &%[1]c [*%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c, *%[2]c]\n", 'b'+i, prev)
	}
	for _, values := range []string{"- a\n- b", "a: [", "x", "&0\n0: *0", "a: &x\n  b: [*x]\n", laughs} {
		if _, err := FromValuesYAML([]byte(values)); err == nil {
			t.Errorf("FromValuesYAML(%q) succeeded", values)
		}
	}
}

func TestDescriptions(t *testing.T) {
	tests := []struct {
		name, values string
		// key is the top-level key whose description is checked.
		key, want string
	}{
		{name: "block above", values: "# Pods to run.\n# At least one.\nreplicas: 1", key: "replicas", want: "Pods to run. At least one."},
		{name: "helm-docs", values: "# -- Pods to run.\n# @default -- 1\nreplicas: 1", key: "replicas", want: "Pods to run."},
		{name: "line comment", values: "replicas: 1 # Pods to run.", key: "replicas", want: "Pods to run."},
		{name: "commented-out example only", values: "a: 1\n# nameOverride: \"\"\nb: 2", key: "b", want: ""},
		{name: "example lines skipped, prose kept", values: "# Tolerations of the pods.\n# tolerations:\n#   - key: dedicated\n#     operator: Exists\ntolerations: []", key: "tolerations", want: "Tolerations of the pods."},
		{name: "only the block directly above", values: "a: 1\n\n# About something else.\n\n# The b setting.\nb: 2", key: "b", want: "The b setting."},
		{name: "the previous key's trailing comment is not this key's", values: "a: 1\n# About a.\n\nb: 2", key: "b", want: ""},
		{name: "prose with a colon is prose", values: "# Note: this is the port.\nport: 80", key: "port", want: "Note: this is the port."},
		{name: "a list item in prose", values: "# Modes:\n# - fast and loose\nmode: x", key: "mode", want: "Modes: - fast and loose"},
		{name: "flow map example", values: "# The labels.\n# labels: {team: a}\nlabels: {}", key: "labels", want: "The labels."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromValuesYAML([]byte(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Properties[tt.key].Description; got != tt.want {
				t.Errorf("description = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsYAMLExample(t *testing.T) {
	for line, want := range map[string]bool{
		"key: value":                    true,
		" tag: latest":                  true,
		"resources:":                    true,
		"   limits:":                    true,
		"     cpu: 100m":                true,
		"- name: foo":                   true,
		"- foo":                         true,
		"enabled: false":                true,
		`name: "my app"`:                true,
		"annotations: {a: b}":           true,
		"Note: this is prose":           false,
		"Number of pods.":               false,
		"e.g. the cluster's domain":     false,
		"- a bullet in prose":           false,
		"See https://example.com/docs.": false,
		"Possible values: a, b":         false,
	} {
		if got := isYAMLExample(line); got != want {
			t.Errorf("isYAMLExample(%q) = %t, want %t", line, got, want)
		}
	}
}
