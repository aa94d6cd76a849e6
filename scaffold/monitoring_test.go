package scaffold

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/promrule"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
)

// The alerts load in Prometheus (its own rule and PromQL parsers), select
// the project's kinds, and the dashboard's queries parse too and cover
// every metric of the runtime.
func TestMonitoring(t *testing.T) {
	tests := []struct {
		name     string
		m        monitoring
		selector string
	}{
		{name: "one kind", m: monitoring{project: "web-operator", kinds: []string{"Webapp"}}, selector: `kind=~"Webapp"`},
		{name: "two kinds", m: monitoring{project: "multi", kinds: []string{"Webapp", "NodeReader"}}, selector: `kind=~"Webapp|NodeReader"`},
		{name: "no kind yet", m: monitoring{project: "empty"}, selector: `kind=~".+"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alerts, err := tt.m.alertsYAML()
			if err != nil {
				t.Fatal(err)
			}
			rule := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(alerts, &rule.Object); err != nil {
				t.Fatal(err)
			}
			if err := promrule.Validate(rule); err != nil {
				t.Fatalf("alerts do not load in Prometheus: %v", err)
			}
			names := map[string]bool{}
			for _, a := range tt.m.alerts() {
				names[a.Alert] = true
				if !strings.Contains(a.Expr, tt.selector) && a.Alert != "ChartpilotOperatorDown" {
					t.Errorf("%s: %s does not select %s", a.Alert, a.Expr, tt.selector)
				}
			}
			for _, want := range []string{"ChartpilotReleaseFailed", "ChartpilotReleaseNotReady", "ChartpilotReleaseDriftRepeated", "ChartpilotReleaseRepairSuspended", "ChartpilotReconcileErrors", "ChartpilotOperatorDown"} {
				if !names[want] {
					t.Errorf("no alert %s", want)
				}
			}

			data, err := tt.m.dashboardYAML()
			if err != nil {
				t.Fatal(err)
			}
			var cm struct {
				Metadata struct{ Labels map[string]string }
				Data     map[string]string
			}
			if err := yaml.Unmarshal(data, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.Metadata.Labels[DashboardLabel] != "1" {
				t.Errorf("dashboard labels %v lack %s: \"1\"", cm.Metadata.Labels, DashboardLabel)
			}
			var model struct {
				Panels []struct {
					Title   string
					Targets []struct{ Expr string }
				}
				Templating struct {
					List []struct{ Name, Definition string }
				}
			}
			if err := json.Unmarshal([]byte(cm.Data[tt.m.project+"-releases.json"]), &model); err != nil {
				t.Fatalf("dashboard JSON: %v", err)
			}
			var queries strings.Builder
			for _, p := range model.Panels {
				for _, target := range p.Targets {
					// Grafana fills in its variables before Prometheus sees the query.
					expr := strings.ReplaceAll(target.Expr, "$__rate_interval", "5m")
					if err := promrule.ValidateExpr(expr); err != nil {
						t.Errorf("panel %q: %v", p.Title, err)
					}
					queries.WriteString(expr + "\n")
				}
			}
			for _, name := range releasemetrics.Names {
				if !strings.Contains(queries.String(), name) {
					t.Errorf("no panel shows %s", name)
				}
			}
			if len(model.Templating.List) != 3 {
				t.Errorf("variables %v, want datasource, kind and namespace", model.Templating.List)
			}
		})
	}
}
