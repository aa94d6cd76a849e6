package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/releasemetrics"
)

// Files of config/prometheus that follow the runtime's metrics and the
// project's kinds: written by init and create api, rewritten by generate.
const (
	AlertsFile    = "config/prometheus/alerts.yaml"
	DashboardFile = "config/prometheus/dashboard.yaml"
)

// DashboardLabel marks the dashboard's ConfigMap for Grafana's sidecar,
// which loads every ConfigMap that has it.
const DashboardLabel = "grafana_dashboard"

// monitoringFiles are the alerts and the dashboard of the project's kinds.
func (g *generator) monitoringFiles() (map[string][]byte, error) {
	m := monitoring{project: g.project.ProjectName}
	for _, w := range g.watches {
		m.kinds = append(m.kinds, w.Kind)
	}
	alerts, err := m.alertsYAML()
	if err != nil {
		return nil, err
	}
	dashboard, err := m.dashboardYAML()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{AlertsFile: alerts, DashboardFile: dashboard}, nil
}

type monitoring struct {
	project string
	kinds   []string
}

// metricsJob is the job Prometheus gives the operator's metrics: the
// ServiceMonitor's Service, named by config/default's prefix.
func (m monitoring) metricsJob() string { return m.project + "-controller-manager-metrics-service" }

// selector keeps the series of this project's kinds: several operators may
// export the runtime's metrics to one Prometheus.
func (m monitoring) selector(extra ...string) string {
	kinds := append([]string(nil), m.kinds...)
	if len(kinds) == 0 {
		kinds = []string{".+"}
	}
	return "{" + strings.Join(append([]string{releasemetrics.LabelKind + `=~"` + strings.Join(kinds, "|") + `"`}, extra...), ",") + "}"
}

// The objects written, as structs so that their fields keep this order.
type (
	prometheusRule struct {
		APIVersion string             `json:"apiVersion"`
		Kind       string             `json:"kind"`
		Metadata   objectMeta         `json:"metadata"`
		Spec       prometheusRuleSpec `json:"spec"`
	}
	objectMeta struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	}
	prometheusRuleSpec struct {
		Groups []ruleGroup `json:"groups"`
	}
	ruleGroup struct {
		Name  string      `json:"name"`
		Rules []alertRule `json:"rules"`
	}
	alertRule struct {
		Alert       string            `json:"alert"`
		Expr        string            `json:"expr"`
		For         string            `json:"for,omitempty"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	configMap struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   objectMeta        `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
)

func (m monitoring) meta(name string, extra map[string]string) objectMeta {
	labels := map[string]string{
		"control-plane":                "controller-manager",
		"app.kubernetes.io/name":       m.project,
		"app.kubernetes.io/managed-by": "kustomize",
	}
	for k, v := range extra {
		labels[k] = v
	}
	return objectMeta{Name: name, Namespace: "system", Labels: labels}
}

// alerts are the alerts that need someone to act, per release: it keeps
// failing, it does not become ready, something else keeps changing its
// objects, its reconciles keep erring; and the operator is down.
func (m monitoring) alerts() []alertRule {
	cr := "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }}"
	by := "by (" + releasemetrics.LabelKind + ", " + releasemetrics.LabelNamespace + ", " + releasemetrics.LabelName + ")"
	sel := m.selector()
	return []alertRule{{
		Alert:  "ChartpilotReleaseFailed",
		Expr:   fmt.Sprintf("max %s (%s%s) == 1", by, releasemetrics.Failed, sel),
		For:    "10m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "A release keeps failing.",
			"description": "The release of " + cr + " has failed for 10 minutes. Its ReleaseFailed condition and events say why.",
		},
	}, {
		Alert: "ChartpilotReleaseNotReady",
		Expr: fmt.Sprintf("max %s (%s%s) == 0 and on (kind, namespace, name) max %s (%s%s) == 0",
			by, releasemetrics.Ready, sel, by, releasemetrics.Failed, sel),
		For:    "15m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "A release is deployed but its objects are not ready.",
			"description": "The objects of " + cr + " have not been ready for 15 minutes. status.health of the custom resource names the objects and why (CrashLoopBackOff, ImagePullBackOff...).",
		},
	}, {
		Alert:  "ChartpilotReleaseDriftRepeated",
		Expr:   fmt.Sprintf("sum %s (increase(%s%s[1h])) > 3", by, releasemetrics.DriftRepairs, sel),
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "Something keeps changing the objects of a release.",
			"description": "The operator restored objects of " + cr + " {{ $value | humanize }} times in the last hour: another controller or a person keeps editing or deleting them.",
		},
	}, {
		Alert:  "ChartpilotReleaseRepairSuspended",
		Expr:   fmt.Sprintf("max %s (%s%s) == 1", by, releasemetrics.RepairSuspended, sel),
		For:    "5m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "The operator stopped repairing a release that something else keeps changing.",
			"description": "The objects of " + cr + " differ from the release and the operator has stopped restoring them: another controller or a person kept changing them. Its Drifted condition names what changed; a change to the custom resource's spec or annotations resumes the repair.",
		},
	}, {
		Alert: "ChartpilotReconcileErrors",
		Expr: fmt.Sprintf("sum %s (rate(%s%s[5m])) > 0",
			by, releasemetrics.Reconciles, m.selector(releasemetrics.LabelResult+`="`+releasemetrics.ResultError+`"`)),
		For:    "15m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "Reconciles of a release keep failing.",
			"description": "Reconciles of " + cr + " have failed for 15 minutes. The operator's log and the custom resource's events say why.",
		},
	}, {
		Alert:  "ChartpilotOperatorDown",
		Expr:   fmt.Sprintf(`absent(up{job="%s"} == 1)`, m.metricsJob()),
		For:    "5m",
		Labels: map[string]string{"severity": "critical"},
		Annotations: map[string]string{
			"summary":     "The " + m.project + " operator is down.",
			"description": "Prometheus has not scraped the " + m.project + " operator for 5 minutes: its releases are not reconciled.",
		},
	}}
}

func (m monitoring) alertsYAML() ([]byte, error) {
	rule := prometheusRule{
		APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule",
		Metadata: m.meta("controller-manager-alerts", nil),
		Spec:     prometheusRuleSpec{Groups: []ruleGroup{{Name: m.project + ".rules", Rules: m.alerts()}}},
	}
	out, err := yaml.Marshal(rule)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertsFile, err)
	}
	return append([]byte(generatedHeader("alerts on the releases' metrics")), out...), nil
}

func generatedHeader(what string) string {
	return "# The " + what + ", generated by chartpilot from the runtime's metrics\n" +
		"# and watches.yaml: `chartpilot generate` (make rbac) rewrites this file.\n"
}

// panel is one panel of the dashboard: a query per target.
type panel struct {
	title, kind, unit string
	targets           [][2]string // expression, legend
	w, h              int
}

// panels are the dashboard: the releases' states, then per release.
func (m monitoring) panels() []panel {
	sel := `{` + releasemetrics.LabelKind + `=~"$kind",` + releasemetrics.LabelNamespace + `=~"$namespace"}`
	selErr := `{` + releasemetrics.LabelKind + `=~"$kind",` + releasemetrics.LabelNamespace + `=~"$namespace",` + releasemetrics.LabelResult + `="` + releasemetrics.ResultError + `"}`
	legend := "{{kind}} {{namespace}}/{{name}}"
	count := func(metric, cond string) string { return fmt.Sprintf("count(%s%s %s) or vector(0)", metric, sel, cond) }
	return []panel{
		{title: "Releases", kind: "stat", w: 4, h: 4, targets: [][2]string{{fmt.Sprintf("count(%s%s)", releasemetrics.Revision, sel), "releases"}}},
		{title: "Ready", kind: "stat", w: 4, h: 4, targets: [][2]string{{count(releasemetrics.Ready, "== 1"), "ready"}}},
		{title: "Failed", kind: "stat", w: 4, h: 4, targets: [][2]string{{count(releasemetrics.Failed, "== 1"), "failed"}}},
		{title: "Drifted", kind: "stat", w: 4, h: 4, targets: [][2]string{{count(releasemetrics.Drifted, "== 1"), "drifted"}}},
		{title: "Objects not healthy", kind: "stat", w: 4, h: 4, targets: [][2]string{{fmt.Sprintf("sum(%s%s) or vector(0)", releasemetrics.UnhealthyObjects, sel), "objects"}}},
		{title: "Drift repairs (1h)", kind: "stat", w: 4, h: 4, targets: [][2]string{{fmt.Sprintf("sum(increase(%s%s[1h])) or vector(0)", releasemetrics.DriftRepairs, sel), "repairs"}}},
		{title: "Reconciles by result", kind: "timeseries", unit: "ops", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("sum by (result) (rate(%s%s[$__rate_interval]))", releasemetrics.Reconciles, sel), "{{result}}"}}},
		{title: "Reconcile duration (p90)", kind: "timeseries", unit: "s", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("histogram_quantile(0.9, sum by (le, kind, namespace, name) (rate(%s_bucket%s[$__rate_interval])))", releasemetrics.ReconcileDuration, sel), legend}}},
		{title: "Helm actions", kind: "timeseries", unit: "ops", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("sum by (action, result) (increase(%s%s[$__rate_interval]))", releasemetrics.HelmActions, sel), "{{action}} {{result}}"}}},
		{title: "Failing reconciles", kind: "timeseries", unit: "ops", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("sum by (kind, namespace, name) (rate(%s%s[$__rate_interval]))", releasemetrics.Reconciles, selErr), legend}}},
		{title: "Objects not healthy", kind: "timeseries", w: 12, h: 8, targets: [][2]string{{releasemetrics.UnhealthyObjects + sel + " > 0", legend}}},
		{title: "Drift repairs, and repair suspended", kind: "timeseries", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("increase(%s%s[1h]) > 0", releasemetrics.DriftRepairs, sel), legend},
			{releasemetrics.RepairSuspended + sel + " == 1", legend + " suspended"}}},
		{title: "Unhealthy upgrades rolled back", kind: "timeseries", w: 12, h: 8, targets: [][2]string{
			{fmt.Sprintf("increase(%s%s[1h]) > 0", releasemetrics.UnhealthyRollbacks, sel), legend}}},
		{title: "Revision deployed", kind: "timeseries", w: 12, h: 8, targets: [][2]string{{releasemetrics.Revision + sel, legend}}},
		{title: "Time since the last successful reconcile", kind: "timeseries", unit: "s", w: 12, h: 8, targets: [][2]string{
			{"time() - " + releasemetrics.LastSuccessTimestamp + sel, legend}}},
	}
}

// dashboard is Grafana's JSON model of the dashboard.
func (m monitoring) dashboard() map[string]any {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	variable := func(name, metric, label string) map[string]any {
		q := fmt.Sprintf("label_values(%s, %s)", metric, label)
		return map[string]any{"name": name, "label": name, "type": "query", "datasource": ds,
			"query": map[string]any{"query": q, "refId": name}, "definition": q,
			"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2,
			"current": map[string]any{"text": "All", "value": "$__all"}}
	}
	var panels []any
	x, y := 0, 0
	for i, p := range m.panels() {
		if x+p.w > 24 {
			x, y = 0, y+p.h
		}
		var targets []any
		for j, t := range p.targets {
			targets = append(targets, map[string]any{"expr": t[0], "legendFormat": t[1], "refId": string(rune('A' + j)), "datasource": ds})
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": p.kind, "title": p.title, "datasource": ds, "targets": targets,
			"gridPos":     map[string]any{"x": x, "y": y, "w": p.w, "h": p.h},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.unit}, "overrides": []any{}},
		})
		x += p.w
	}
	return map[string]any{
		"title": m.project + " releases", "uid": m.project + "-releases", "tags": []string{"chartpilot", m.project},
		"editable": true, "schemaVersion": 39, "refresh": "30s",
		"time": map[string]any{"from": "now-6h", "to": "now"},
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
			variable("kind", releasemetrics.Revision+m.selector(), releasemetrics.LabelKind),
			variable("namespace", releasemetrics.Revision+`{`+releasemetrics.LabelKind+`=~"$kind"}`, releasemetrics.LabelNamespace),
		}},
		"panels": panels,
	}
}

func (m monitoring) dashboardYAML() ([]byte, error) {
	model, err := json.MarshalIndent(m.dashboard(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	cm := configMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: m.meta("controller-manager-dashboard", map[string]string{DashboardLabel: "1"}),
		Data:     map[string]string{m.project + "-releases.json": string(model)},
	}
	out, err := yaml.Marshal(cm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	return append([]byte(generatedHeader("Grafana dashboard of the releases (loaded by Grafana's sidecar through its label)")), out...), nil
}

// monitoringResource is config/default's line that ships config/prometheus
// (ServiceMonitor, alerts, dashboard); init writes it commented out, since
// OLM refuses a bundle with monitoring objects on a cluster without
// prometheus-operator's CRDs.
const monitoringResource = "- ../prometheus\n"

// EnableMonitoring uncomments config/prometheus in the project's
// config/default, as the comment there tells the author to.
func EnableMonitoring(dir string) error {
	path := filepath.Join(dir, "config", "default", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("enabling monitoring: %w", err)
	}
	enabled := bytes.Replace(data, []byte("#"+monitoringResource), []byte(monitoringResource), 1)
	if bytes.Equal(enabled, data) {
		return fmt.Errorf("enabling monitoring: %s has no commented-out %q", path, monitoringResource)
	}
	return os.WriteFile(path, enabled, 0o644)
}
