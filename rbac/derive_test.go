package rbac

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/charttest"
)

// chartDir is a chart under the chart package's testdata.
func chartDir(name string) string { return filepath.Join("..", "chart", "testdata", "charts", name) }

// ruleStrings renders rules as "scope group/resource[names]: verbs" lines.
func ruleStrings(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		scope := "cluster"
		if r.Namespaced {
			scope = "ns"
		}
		if len(r.NonResourceURLs) > 0 {
			out = append(out, fmt.Sprintf("%s %v: %s", scope, r.NonResourceURLs, strings.Join(r.Verbs, ",")))
			continue
		}
		names := ""
		if len(r.ResourceNames) > 0 {
			names = fmt.Sprintf("%v", r.ResourceNames)
		}
		out = append(out, fmt.Sprintf("%s %s/%s%s: %s", scope, r.APIGroups[0], r.Resources[0], names, strings.Join(r.Verbs, ",")))
	}
	return out
}

const all = "get,list,watch,create,update,patch,delete"

// operatorRules are the rules every operator gets, for owner resource "things".
var operatorRules = []string{
	"ns /events: create,patch",
	"ns /secrets: " + all,
	"ns charts.example.com/things: get,list,watch,update,patch",
	"ns charts.example.com/things/finalizers: update",
	"ns charts.example.com/things/status: get,update,patch",
	"ns coordination.k8s.io/leases: get,create,update",
	metricsTokenReviews,
	metricsAccessReviews,
}

// The rules that serve the metrics to authorized scrapers only
// (metricsauth.AuthRules): cluster-scoped, whatever the operator watches.
const (
	metricsTokenReviews  = "cluster authentication.k8s.io/tokenreviews: create"
	metricsAccessReviews = "cluster authorization.k8s.io/subjectaccessreviews: create"
)

// podsRead is what an operator of a chart with workloads adds, for their health.
const podsRead = "ns /pods: get,list,watch"

// hpaManaged is what an operator of a chart with Deployments or StatefulSets
// and no autoscaling values of its own adds, for the HPAs a CR may ask for.
const hpaManaged = "ns autoscaling/horizontalpodautoscalers: " + all

// with adds rules to operatorRules, sorted (rule sets are compared sorted).
func with(extra ...string) []string {
	out := append(append([]string(nil), extra...), operatorRules...)
	sort.Strings(out)
	return out
}

func TestDerive(t *testing.T) {
	tests := []struct {
		name    string
		chart   string
		samples []map[string]any
		// gates maps a kind to the values gating it (absent: not gated).
		gates    map[string][]string
		rules    []string
		warnings []string
		errors   []string
	}{{
		name:  "plain app with a value-gated autoscaler",
		chart: "webapp",
		gates: map[string][]string{"HorizontalPodAutoscaler": {"autoscaling.enabled"}},
		rules: with(
			"ns /configmaps: "+all,
			"ns /services: "+all,
			"ns apps/deployments: "+all,
			"ns autoscaling/horizontalpodautoscalers: "+all,
			podsRead,
		),
	}, {
		name:    "a sample turning the autoscaler on ungates it",
		chart:   "webapp",
		samples: []map[string]any{{"autoscaling": map[string]any{"enabled": true}}},
		rules: with(
			"ns /configmaps: "+all,
			"ns /services: "+all,
			"ns apps/deployments: "+all,
			"ns autoscaling/horizontalpodautoscalers: "+all,
			podsRead,
		),
	}, {
		name:  "file:// subchart, gated subchart kind and an unknown CRD kind",
		chart: "umbrella",
		gates: map[string][]string{
			"PodDisruptionBudget": {"cache.pdb.enabled"},
			"ServiceMonitor":      {"metrics.serviceMonitor.enabled"},
		},
		rules: with(
			"ns /configmaps: "+all,
			"ns /services: "+all,
			"ns apps/statefulsets: "+all,
			"ns monitoring.coreos.com/servicemonitors: "+all,
			"ns policy/poddisruptionbudgets: "+all,
			podsRead, hpaManaged,
		),
		warnings: []string{`umbrella/templates/servicemonitor.yaml: monitoring.coreos.com/v1 ServiceMonitor is neither a Kubernetes 1.36 kind nor defined by the chart's CRDs: its resource name was guessed the kubectl way (lower-case kind, plural) as "servicemonitors", namespaced; if its CRD says otherwise, fix the rule {apiGroups: ["monitoring.coreos.com"], resources: ["servicemonitors"]`},
	}, {
		name:  "kind from the chart's own CRD",
		chart: "widgets",
		rules: with(
			"cluster apiextensions.k8s.io/customresourcedefinitions: get,list,watch,create",
			"ns example.com/widgets: "+all,
		),
	}, {
		name:  "cluster-scoped kinds and a ClusterRole's permissions held",
		chart: "clusterwide",
		rules: with(
			"cluster /nodes: get,list,watch",
			"cluster rbac.authorization.k8s.io/clusterrolebindings: "+all,
			"cluster rbac.authorization.k8s.io/clusterroles: "+all,
			"cluster scheduling.k8s.io/priorityclasses: "+all,
			"ns /serviceaccounts: "+all,
		),
	}, {
		name:  "values.schema.json chart",
		chart: "validated",
		rules: with("ns /configmaps: " + all),
	}, {
		name:  "removed APIs are errors naming file, kind and replacement",
		chart: "legacy",
		rules: with(
			"ns apps/deployments: "+all,
			"ns batch/cronjobs: "+all,
		),
		errors: []string{
			"legacy/templates/cronjob.yaml: batch/v1beta1 CronJob is no longer served since Kubernetes 1.25: use apiVersion batch/v1",
			"legacy/templates/deployment.yaml: extensions/v1beta1 Deployment is no longer served since Kubernetes 1.16: use apiVersion apps/v1",
			"legacy/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served since Kubernetes 1.25: PodSecurityPolicy has no replacement API; use Pod Security Admission (namespace labels pod-security.kubernetes.io/*)",
		},
	}, {
		name:  "a removed CRD API under crds/ is an error naming the file",
		chart: "oldcrds",
		rules: with(
			"cluster apiextensions.k8s.io/customresourcedefinitions: get,list,watch,create",
			"ns /configmaps: "+all,
		),
		errors: []string{
			"oldcrds/crds/gadgets.yaml: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served since Kubernetes 1.22: use apiVersion apiextensions.k8s.io/v1",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, SampleValues: tt.samples})
			if err != nil {
				t.Fatal(err)
			}
			checkDerived(t, res, tt.rules, tt.gates)
			checkProblems(t, "warnings", res.Warnings, tt.warnings)
			checkProblems(t, "errors", res.Errors, tt.errors)
			if err := res.Err(); (err != nil) != (len(tt.errors) > 0) || (err != nil && !errors.Is(err, ErrRemovedAPI)) {
				t.Errorf("Err() = %v", err)
			}
			// Everything is in the ClusterRole when watching all namespaces.
			if res.Role != nil || len(res.ClusterRole.Rules) != len(res.Rules) {
				t.Errorf("Role = %v, ClusterRole has %d of %d rules", res.Role, len(res.ClusterRole.Rules), len(res.Rules))
			}
			for _, r := range res.ClusterRole.Rules {
				for _, v := range append(append([]string(nil), r.Verbs...), r.Resources...) {
					if v == "*" {
						t.Errorf("wildcard in %v", r)
					}
				}
			}
		})
	}
}

// checkDerived checks the rules (sorted, as ruleStrings) and the gates of
// each gated kind.
func checkDerived(t *testing.T, res *Result, rules []string, gates map[string][]string) {
	t.Helper()
	got := ruleStrings(res.Rules)
	sort.Strings(got)
	if !reflect.DeepEqual(got, rules) {
		t.Errorf("rules:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(rules, "\n     "))
	}
	gotGates := map[string][]string{}
	for _, k := range res.Kinds {
		if len(k.Gates) > 0 {
			gotGates[k.Kind] = k.Gates
		}
	}
	if gates == nil {
		gates = map[string][]string{}
	}
	if !reflect.DeepEqual(gotGates, gates) {
		t.Errorf("gates = %v, want %v", gotGates, gates)
	}
}

// checkProblems checks that each wanted problem is the prefix of one found,
// one to one.
func checkProblems(t *testing.T, what string, got []Problem, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d %q, want %d %q", what, len(got), got, len(want), want)
		return
	}
	for i := range want {
		if !strings.HasPrefix(got[i].String(), want[i]) {
			t.Errorf("%s[%d] = %q, want it to start with %q", what, i, got[i].String(), want[i])
		}
	}
}

func TestDeriveWatchNamespaceSplitsRoles(t *testing.T) {
	c, err := chart.Load(chartDir("clusterwide"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, WatchNamespace: "ops", Name: "clusterwide-manager"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Role == nil || res.Role.Namespace != "ops" || res.Role.Name != "clusterwide-manager" {
		t.Fatalf("Role = %+v", res.Role)
	}
	var ns, cluster []string
	for _, r := range res.Role.Rules {
		ns = append(ns, r.Resources[0])
	}
	for _, r := range res.ClusterRole.Rules {
		cluster = append(cluster, r.Resources[0])
	}
	wantNS := []string{"events", "secrets", "serviceaccounts", "things", "things/finalizers", "things/status", "leases"}
	wantCluster := []string{"nodes", "tokenreviews", "subjectaccessreviews", "clusterrolebindings", "clusterroles", "priorityclasses"}
	if !reflect.DeepEqual(ns, wantNS) || !reflect.DeepEqual(cluster, wantCluster) {
		t.Errorf("Role resources = %q, want %q\nClusterRole resources = %q, want %q", ns, wantNS, cluster, wantCluster)
	}
}

// TestDeriveScannedOnly covers kinds the gates create: a string compared
// (rendered with that string), a value negated, and a condition chartpilot
// cannot read (a variable holding a helper's output), whose kind only the
// template's text shows.
func TestDeriveScannedOnly(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: modes\nversion: 0.1.0\n",
		"values.yaml":               "mode: modern\nlegacyJob:\n  disabled: false\ningress:\n  enabled: false\n",
		"templates/job.yaml":        "{{- if eq .Values.mode \"batch\" }}\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: j, image: x}]\n{{- end }}\n",
		"templates/configmap.yaml":  "{{- if not .Values.legacyJob.disabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n",
		"templates/_helpers.tpl":    "{{- define \"x\" }}apiVersion: v1\nkind: Secret\n{{- end }}\n",
		"templates/NOTES.txt":       "kind: Nothing\n",
		"templates/ingress.yaml":    "{{- if .Values.ingress.enabled }}\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  defaultBackend:\n    service:\n      name: x\n      port:\n        number: 80\n{{- end }}\n",
		"templates/endpoints.yaml":  "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/claims.yaml":     "{{- if .Values.dra }}\napiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n",
		"templates/unused-tpl.yaml": "{{- /* nothing */}}\n",
		"templates/cron.yaml":       "{{- $m := include \"x\" . }}\n{{- if eq (len $m) 3 }}\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n",
	}
	c := charttest.Load(t, files)
	res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range res.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s gates=%v scanned=%t", k.Kind, k.Gates, k.ScannedOnly))
	}
	want := []string{
		"ConfigMap gates=[] scanned=false",
		"Endpoints gates=[] scanned=false",
		"CronJob gates=[] scanned=true",
		"Job gates=[mode=batch] scanned=false",
		"Ingress gates=[ingress.enabled] scanned=false",
		"ResourceClaim gates=[dra] scanned=false",
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds:\n got %q\nwant %q", kinds, want)
	}
	checkProblems(t, "warnings", res.Warnings, []string{
		"modes/templates/endpoints.yaml: v1 Endpoints is deprecated since Kubernetes 1.33: use discovery.k8s.io/v1 EndpointSlice",
		"modes/templates/cron.yaml: batch/v1 CronJob appears in the template but no render created it (gated by a condition chartpilot cannot read",
		"modes/templates/claims.yaml: resource.k8s.io/v1beta1 ResourceClaim is a pre-release version of an API that is GA in Kubernetes 1.36",
	})
}

// A kind chosen by a value: with an enum in values.schema.json every choice
// is rendered and granted; without one, a warning names the rules for the
// kinds the value's comment mentions.
func TestDeriveKindFromValue(t *testing.T) {
	workload := "apiVersion: apps/v1\nkind: {{ .Values.workload.kind }}\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers: [{name: app, image: x}]\n"
	values := "workload:\n  # kind is the workload's kind: StatefulSet or Deployment\n  kind: Deployment\n"
	tests := []struct {
		name     string
		schema   string
		rules    []string
		gates    map[string][]string
		warnings []string
	}{{
		name:   "enum in values.schema.json",
		schema: `{"type":"object","properties":{"workload":{"type":"object","properties":{"kind":{"type":"string","enum":["Deployment","StatefulSet","DaemonSet"]}}}}}`,
		rules:  with("ns apps/daemonsets: "+all, "ns apps/deployments: "+all, "ns apps/statefulsets: "+all, podsRead, hpaManaged),
		gates:  map[string][]string{"DaemonSet": {"workload.kind=DaemonSet"}, "StatefulSet": {"workload.kind=StatefulSet"}},
	}, {
		name:     "no schema: the comment's kinds are named, not granted",
		rules:    with("ns apps/deployments: "+all, podsRead, hpaManaged),
		warnings: []string{`chooser/templates/workload.yaml: the kind of a document comes from .Values.workload.kind, which values.schema.json does not restrict to an enum: only what the default values render is granted, and a CR choosing another kind is forbidden at runtime; its description names {apiGroups: ["apps"], resources: ["statefulsets"], verbs: [get, list, watch, create, update, patch, delete]} for StatefulSet; {apiGroups: ["apps"], resources: ["deployments"]`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"Chart.yaml":              "apiVersion: v2\nname: chooser\nversion: 0.1.0\n",
				"values.yaml":             values,
				"templates/workload.yaml": workload,
			}
			if tt.schema != "" {
				files["values.schema.json"] = tt.schema
			}
			res, err := Derive(Options{Chart: charttest.Load(t, files), Owner: Owner{Group: "charts.example.com", Resource: "things"}})
			if err != nil {
				t.Fatal(err)
			}
			checkDerived(t, res, tt.rules, tt.gates)
			checkProblems(t, "warnings", res.Warnings, tt.warnings)
		})
	}
}

func TestCheckAPI(t *testing.T) {
	tests := []struct {
		apiVersion, kind, k8s string
		want                  apiStatus
		msg                   string
	}{
		{"batch/v1beta1", "CronJob", "1.20", apiCurrent, ""},
		{"batch/v1beta1", "CronJob", "1.24", apiDeprecated, "batch/v1beta1 CronJob is deprecated since Kubernetes 1.21 and removed in 1.25: use apiVersion batch/v1"},
		{"batch/v1beta1", "CronJob", "v1.25.3", apiRemoved, "batch/v1beta1 CronJob is no longer served since Kubernetes 1.25: use apiVersion batch/v1"},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.36", apiRemoved, "autoscaling/v2beta2 HorizontalPodAutoscaler is no longer served since Kubernetes 1.26: use apiVersion autoscaling/v2"},
		{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.31", apiDeprecated, "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated since Kubernetes 1.29 and removed in 1.32"},
		{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.32", apiRemoved, "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is no longer served since Kubernetes 1.32"},
		{"extensions/v1beta1", "Ingress", "1.21", apiDeprecated, "extensions/v1beta1 Ingress is deprecated since Kubernetes 1.14 and removed in 1.22: use apiVersion networking.k8s.io/v1"},
		{"apps/v1", "Deployment", "1.36", apiCurrent, ""},
		{"v1", "Endpoints", "1.36", apiDeprecated, "v1 Endpoints is deprecated since Kubernetes 1.33: use discovery.k8s.io/v1 EndpointSlice"},
		{"storage.k8s.io/v1beta1", "VolumeAttributesClass", "1.36", apiDeprecated, "storage.k8s.io/v1beta1 VolumeAttributesClass is a pre-release version"},
		{"monitoring.coreos.com/v1alpha1", "AlertmanagerConfig", "1.36", apiCurrent, ""},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+" "+tt.kind+" "+tt.k8s, func(t *testing.T) {
			minor, err := ParseKubeVersion(tt.k8s)
			if err != nil {
				t.Fatal(err)
			}
			gvk := schemaGVK(tt.apiVersion, tt.kind)
			got, msg := checkAPI(gvk, minor)
			if got != tt.want || !strings.HasPrefix(msg, tt.msg) || (tt.msg == "" && msg != "") {
				t.Errorf("checkAPI() = %v, %q; want %v, %q", got, msg, tt.want, tt.msg)
			}
		})
	}
}

func TestParseKubeVersion(t *testing.T) {
	for in, want := range map[string]int{"1.36": 36, "v1.36": 36, "v1.25.3": 25, " 1.9 ": 9} {
		if got, err := ParseKubeVersion(in); err != nil || got != want {
			t.Errorf("ParseKubeVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2.1", "1", "1.x", "v1.-1"} {
		if _, err := ParseKubeVersion(in); err == nil {
			t.Errorf("ParseKubeVersion(%q) succeeded", in)
		}
	}
}

func TestMerge(t *testing.T) {
	var results []*Result
	for _, name := range []string{"webapp", "umbrella"} {
		c, err := chart.Load(chartDir(name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: name + "s"}})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	m := Merge(results...)
	got := ruleStrings(m.Rules)
	sort.Strings(got)
	want := []string{
		"ns /configmaps: " + all,
		"ns /events: create,patch",
		"ns /secrets: " + all,
		"ns /services: " + all,
		"ns apps/deployments: " + all,
		"ns apps/statefulsets: " + all,
		"ns autoscaling/horizontalpodautoscalers: " + all,
		"ns charts.example.com/umbrellas: get,list,watch,update,patch",
		"ns charts.example.com/umbrellas/finalizers: update",
		"ns charts.example.com/umbrellas/status: get,update,patch",
		"ns charts.example.com/webapps: get,list,watch,update,patch",
		"ns charts.example.com/webapps/finalizers: update",
		"ns charts.example.com/webapps/status: get,update,patch",
		"ns coordination.k8s.io/leases: get,create,update",
		"ns monitoring.coreos.com/servicemonitors: " + all,
		"ns policy/poddisruptionbudgets: " + all,
		podsRead,
		metricsTokenReviews,
		metricsAccessReviews,
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged rules:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	if len(m.ClusterRole.Rules) != len(want) {
		t.Errorf("ClusterRole has %d rules, want %d", len(m.ClusterRole.Rules), len(want))
	}
	for _, r := range m.Rules {
		if r.Resources[0] == "configmaps" && len(r.Reasons) != 2 {
			t.Errorf("configmaps reasons = %q, want one per chart", r.Reasons)
		}
	}
}

func TestCheckCRDs(t *testing.T) {
	tests := []struct {
		name, chart, kubeVersion string
		// removed and deprecated are the starts of the problems found.
		removed, deprecated []string
	}{
		{name: "v1 CRDs pass", chart: "widgets"},
		{name: "a chart without crds/ passes", chart: "webapp"},
		{name: "v1beta1 CRD on the default version", chart: "oldcrds", removed: []string{
			"oldcrds/crds/gadgets.yaml: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served since Kubernetes 1.22: use apiVersion apiextensions.k8s.io/v1",
		}},
		{name: "v1beta1 CRD on a cluster that still serves it", chart: "oldcrds", kubeVersion: "1.21", deprecated: []string{
			"oldcrds/crds/gadgets.yaml: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated since Kubernetes 1.16 and removed in 1.22",
		}},
		{name: "v1beta1 CRD, version written with a v and a patch", chart: "oldcrds", kubeVersion: "v1.30.2", removed: []string{
			"oldcrds/crds/gadgets.yaml: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served since Kubernetes 1.22",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			removed, deprecated, err := CheckCRDs(c, tt.kubeVersion)
			if err != nil {
				t.Fatal(err)
			}
			checkProblems(t, "removed", removed, tt.removed)
			checkProblems(t, "deprecated", deprecated, tt.deprecated)
		})
	}
}

// Messages speak of the Kubernetes version asked for, not of the built-in
// table's 1.36, and a kind removed since resolves for a target that serves it.
func TestMessagesNameTheTargetVersion(t *testing.T) {
	tests := []struct {
		name, chart, kubeVersion string
		// kind is a kind whose resolution is checked.
		kind          string
		wantResource  string
		wantNamespace bool
		// warning is the start of a warning that must be there (the
		// template's name first).
		warning string
		// notIn is a text no warning may contain.
		notIn string
	}{{
		name: "an unknown kind on 1.21", chart: "umbrella", kubeVersion: "1.21",
		kind: "ServiceMonitor", wantResource: "servicemonitors", wantNamespace: true,
		warning: "umbrella/templates/servicemonitor.yaml: monitoring.coreos.com/v1 ServiceMonitor is neither a Kubernetes 1.21 kind chartpilot knows",
		notIn:   "1.36 kind",
	}, {
		name: "an unknown kind on 1.36", chart: "umbrella", kubeVersion: "1.36",
		kind: "ServiceMonitor", wantResource: "servicemonitors", wantNamespace: true,
		warning: "umbrella/templates/servicemonitor.yaml: monitoring.coreos.com/v1 ServiceMonitor is neither a Kubernetes 1.36 kind nor defined by the chart's CRDs",
	}, {
		name: "PodSecurityPolicy on 1.21: cluster-scoped, not guessed", chart: "legacy", kubeVersion: "1.21",
		kind: "PodSecurityPolicy", wantResource: "podsecuritypolicies", wantNamespace: false,
		warning: "legacy/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is deprecated since Kubernetes 1.21 and removed in 1.25",
		notIn:   "guessed",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, KubeVersion: tt.kubeVersion})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, w := range res.Warnings {
				found = found || strings.HasPrefix(w.String(), tt.warning)
				if tt.notIn != "" && strings.Contains(w.String(), tt.notIn) {
					t.Errorf("warning %q contains %q", w, tt.notIn)
				}
			}
			if !found {
				t.Errorf("no warning starting %q in %q", tt.warning, res.Warnings)
			}
			for _, k := range res.Kinds {
				if k.Kind == tt.kind && (k.Resource != tt.wantResource || k.Namespaced != tt.wantNamespace) {
					t.Errorf("%s resolved to %s (namespaced %t), want %s (namespaced %t)", k.Kind, k.Resource, k.Namespaced, tt.wantResource, tt.wantNamespace)
				}
			}
		})
	}
}

func TestPrereleaseMessage(t *testing.T) {
	gvk := schemaGVK("batch/v2alpha1", "CronJob")
	tests := []struct {
		minor int
		want  string
	}{
		{36, "batch/v2alpha1 CronJob is a pre-release version of an API that is GA in Kubernetes 1.36 (pre-release versions are deprecated once GA and off by default): use apiVersion batch/v1"},
		{21, "batch/v2alpha1 CronJob is a pre-release version of an API that Kubernetes 1.36 serves as GA (pre-release versions are deprecated once GA and off by default); whether Kubernetes 1.21 does, chartpilot's table cannot tell: use apiVersion batch/v1 if 1.21 serves it"},
	}
	for _, tt := range tests {
		status, msg := checkAPI(gvk, tt.minor)
		if status != apiDeprecated || msg != tt.want {
			t.Errorf("checkAPI(%v, 1.%d) = %v, %q; want deprecated, %q", gvk, tt.minor, status, msg, tt.want)
		}
	}
}

// An operator that migrates its CRD's storage gets to read that CRD and
// update its status, by name and cluster-wide (CRDs are cluster-scoped),
// and nothing more than without the migration.
func TestDeriveMigrateStorage(t *testing.T) {
	c, err := chart.Load(chartDir("clusterwide"))
	if err != nil {
		t.Fatal(err)
	}
	owner := Owner{Group: "charts.example.com", Resource: "things"}
	without, err := Derive(Options{Chart: c, Owner: owner, WatchNamespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Derive(Options{Chart: c, Owner: owner, WatchNamespace: "ops", MigrateStorage: []string{"things.charts.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, r := range ruleStrings(without.Rules) {
		before[r] = true
	}
	var added []string
	for _, r := range ruleStrings(res.Rules) {
		if !before[r] {
			added = append(added, r)
		}
	}
	want := []string{
		"cluster apiextensions.k8s.io/customresourcedefinitions[things.charts.example.com]: get",
		"cluster apiextensions.k8s.io/customresourcedefinitions/status[things.charts.example.com]: update",
	}
	if !reflect.DeepEqual(added, want) || len(res.Rules) != len(without.Rules)+2 {
		t.Errorf("rules added for the migration: %q, want %q", added, want)
	}
	for _, r := range res.ClusterRole.Rules {
		if r.Resources[0] == "customresourcedefinitions/status" && !reflect.DeepEqual(r.ResourceNames, []string{"things.charts.example.com"}) {
			t.Errorf("ClusterRole rule %v: want it limited to the CRD by name", r)
		}
	}
}

// With the backup API the operator reads restore grants and may write
// none: a grant is the consent of the namespace restored into, and what
// the operator may write, a chart it renders or a restore it runs could.
func TestDeriveBackupReadsRestoreGrantsOnly(t *testing.T) {
	c, err := chart.Load(chartDir("clusterwide"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"}, Backup: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rules {
		for _, resource := range r.Resources {
			if resource == "thingrestoregrants" || strings.HasPrefix(resource, "thingrestoregrants/") || resource == "*" {
				got = append(got, ruleStrings([]Rule{r})...)
			}
		}
	}
	want := []string{"ns charts.example.com/thingrestoregrants: get,list"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules on restore grants: %q, want %q", got, want)
	}
}
