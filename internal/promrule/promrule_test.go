package promrule

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestValidate(t *testing.T) {
	rule := func(spec string) string {
		return "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: alerts}\nspec:\n" + spec
	}
	tests := []struct {
		name, obj, wantErr string
	}{{
		name: "a good alert",
		obj: rule(`  groups:
  - name: g
    rules:
    - alert: Down
      expr: up{job="x"} == 0
      for: 5m
      labels: {severity: critical}
      annotations: {description: '{{ $labels.instance }} is down'}`),
	}, {
		name:    "a PromQL syntax error",
		obj:     rule("  groups: [{name: g, rules: [{alert: A, expr: 'rate(x[5m]'}]}]"),
		wantErr: "could not parse expression",
	}, {
		name:    "an unknown function",
		obj:     rule("  groups: [{name: g, rules: [{alert: A, expr: 'ratez(x[5m]) > 0'}]}]"),
		wantErr: "unknown function",
	}, {
		name:    "a bad annotation template",
		obj:     rule("  groups: [{name: g, rules: [{alert: A, expr: 'up == 0', annotations: {d: '{{ $labels.x '}}]}]"),
		wantErr: "annotation",
	}, {
		name:    "a bad duration",
		obj:     rule("  groups: [{name: g, rules: [{alert: A, expr: 'up == 0', for: 5 minutes}]}]"),
		wantErr: "in duration",
	}, {
		name:    "a field Prometheus does not know",
		obj:     rule("  groups: [{name: g, rules: [{alert: A, expr: 'up == 0', severity: high}]}]"),
		wantErr: "severity",
	}, {
		name:    "no groups",
		obj:     rule("  groups: []"),
		wantErr: "spec.groups is empty",
	}, {
		name:    "not a PrometheusRule",
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}",
		wantErr: "is not a PrometheusRule",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.obj), &u.Object); err != nil {
				t.Fatal(err)
			}
			err := Validate(u)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), "PrometheusRule alerts") && tt.name != "not a PrometheusRule":
				t.Errorf("error %v does not name the object", err)
			}
		})
	}
}

func TestValidateExpr(t *testing.T) {
	for expr, ok := range map[string]bool{
		`histogram_quantile(0.9, sum by (le) (rate(x_bucket{kind=~"$kind"}[5m])))`: true,
		`sum by (kind) (x`:  false,
		`time() - x > 3600`: true,
	} {
		if err := ValidateExpr(expr); (err == nil) != ok {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

func TestMetrics(t *testing.T) {
	u := &unstructured.Unstructured{}
	err := yaml.Unmarshal([]byte(`apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: r}
spec:
  groups:
  - name: g
    rules:
    - {alert: A, expr: 'max by (name) (b_total{kind="X"}) == 1 and on (name) a == 0'}
    - {alert: B, expr: 'absent(up{job="j"} == 1)'}
    - {alert: C, expr: 'increase(b_total[1h]) > 3'}`), &u.Object)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Metrics(u)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,b_total,up" {
		t.Errorf("Metrics = %v, want a, b_total, up", got)
	}
}
