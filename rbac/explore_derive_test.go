package rbac

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
)

// ownChart is a chart under this package's testdata.
func ownChart(t *testing.T, name string) *chart.Chart {
	t.Helper()
	c, err := chart.Load(filepath.Join("testdata", "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDeriveExploresGates derives RBAC for small charts that each show one
// family of what the chart's templates decide: every gate explored (issue
// class 1), the APIs the chart probes for (class 7), removed APIs behind
// gates, chart roles Kubernetes would refuse, cluster-admin in effect
// (class 9), required values (class 2).
func TestDeriveExploresGates(t *testing.T) {
	tests := []struct {
		name   string
		chart  string
		values map[string]any
		kube   string
		// rules must all be derived (as ruleStrings).
		rules []string
		// absent are rules that must not be.
		absent []string
		// gates maps kinds to their gates.
		gates map[string][]string
		// warnings and errors: each must start one found (the template
		// first); noWarning is a text no warning may hold.
		warnings, errors []string
		noWarning        string
	}{{
		name:  "every kind of gate, a templated apiVersion under a comparison",
		chart: "gated",
		rules: []string{
			"ns policy/poddisruptionbudgets: " + all,
			"ns autoscaling/horizontalpodautoscalers: " + all,
			"ns networking.k8s.io/ingresses: " + all,
			"ns batch/cronjobs: " + all,
			"ns batch/jobs: " + all,
			"ns networking.k8s.io/networkpolicies: " + all,
			"ns /secrets: " + all,
			"ns /endpoints: get,list",
			"ns /configmaps: get",
			"ns monitoring.coreos.com/servicemonitors: " + all,
		},
		// An apiVersion a made-up value writes is not granted.
		absent: []string{"ns /servicemonitors: " + all},
		gates: map[string][]string{
			"PodDisruptionBudget":     {"replicaCount=2"},
			"HorizontalPodAutoscaler": {"autoscaling"},
			"Ingress":                 {"ingresses"},
			"CronJob":                 {"mode=cron"},
			"Job":                     {"mode=job"},
			"NetworkPolicy":           {"networkPolicy.enabled"},
		},
		warnings:  []string{"gated/templates/extra.yaml: renders whole objects given in .Values.extraObjects"},
		noWarning: "v1beta1",
	}, {
		name:  "the same chart for Kubernetes 1.21 takes the old HPA API the chart switches to",
		chart: "gated", kube: "1.21",
		rules:    []string{"ns policy/poddisruptionbudgets: " + all, "ns autoscaling/horizontalpodautoscalers: " + all},
		gates:    map[string][]string{"PodDisruptionBudget": {"replicaCount=2"}, "HorizontalPodAutoscaler": {"autoscaling"}},
		warnings: []string{"gated/templates/extra.yaml: renders whole objects"},
	}, {
		name:  "APIs the chart probes for are present: their kinds are granted",
		chart: "probes",
		rules: []string{
			"ns monitoring.coreos.com/servicemonitors: " + all,
			"ns keda.sh/scaledobjects: " + all,
			"ns autoscaling/horizontalpodautoscalers: " + all,
		},
		absent: []string{"cluster policy/podsecuritypolicies: " + all},
		gates: map[string][]string{
			"ServiceMonitor": {"metrics.serviceMonitor.enabled", "the cluster serves monitoring.coreos.com/v1"},
			"ScaledObject":   {"the cluster serves keda.sh/v1alpha1/ScaledObject"},
		},
		warnings: []string{
			"probes/templates/scaledobject.yaml: keda.sh/v1alpha1 ScaledObject is neither a Kubernetes 1.36 kind",
			"probes/templates/servicemonitor.yaml: monitoring.coreos.com/v1 ServiceMonitor is neither",
			"probes/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served since Kubernetes 1.25",
		},
	}, {
		name:  "on Kubernetes 1.21 the probe for PodSecurityPolicy passes",
		chart: "probes", kube: "1.21",
		rules: []string{"cluster policy/podsecuritypolicies: " + all},
		warnings: []string{
			"probes/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is deprecated since Kubernetes 1.21",
		},
	}, {
		name:   "removed APIs behind gates are warnings naming template, gate and fix",
		chart:  "removedgated",
		rules:  []string{"ns policy/poddisruptionbudgets: " + all, "cluster apiregistration.k8s.io/apiservices: " + all},
		absent: []string{"cluster policy/podsecuritypolicies: " + all},
		gates:  map[string][]string{"PodSecurityPolicy": {"podSecurityPolicy.enabled"}},
		warnings: []string{
			"removedgated/templates/apiservice.yaml: apiregistration.k8s.io/v1beta1 APIService is no longer served since Kubernetes 1.22: use apiVersion apiregistration.k8s.io/v1; the chart writes it only on clusters a check of .Capabilities picks",
			"removedgated/templates/pdb.yaml: policy/v1beta1 PodDisruptionBudget is no longer served since Kubernetes 1.25: use apiVersion policy/v1; the chart writes it only on clusters a check of .Capabilities picks",
			"removedgated/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served since Kubernetes 1.25: PodSecurityPolicy has no replacement API; use Pod Security Admission (namespace labels pod-security.kubernetes.io/*); the default values do not create it, podSecurityPolicy.enabled does: a custom resource that sets that fails to install",
		},
	}, {
		name:   "a removed API the values render is an error",
		chart:  "removedgated",
		values: map[string]any{"podSecurityPolicy": map[string]any{"enabled": true}},
		errors: []string{"removedgated/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served since Kubernetes 1.25"},
	}, {
		name:   "chart roles and bindings Kubernetes would refuse are read, and named",
		chart:  "badrbac",
		rules:  []string{"cluster /configmaps: list", "cluster rbac.authorization.k8s.io/clusterroles: " + all},
		absent: []string{"cluster /pods: get"},
		warnings: []string{
			`badrbac/templates/role.yaml: ClusterRole release: rules[0].verbs is the string "get", not a list of strings: Kubernetes refuses the object`,
			"badrbac/templates/binding.yaml: RoleBinding release-numbered: roleRef.name is 42 (a number), not a string: Kubernetes refuses the binding",
		},
	}, {
		name:     "a chart role with */*: the operator is cluster-admin in effect",
		chart:    "admin",
		rules:    []string{"cluster */*: *"},
		warnings: []string{"the operator is cluster-admin in effect: it must hold {apiGroups: [*], resources: [*], verbs: [*]} (every verb it lists on every resource of every API group) cluster-wide, because: held so that Helm may create ClusterRole release-controller (admin/templates/clusterrole.yaml)"},
	}, {
		name:      "required values and fail guards a gate needs are made up, not a failure",
		chart:     "required",
		values:    map[string]any{"ui": map[string]any{"message": "hello"}},
		rules:     []string{"ns /configmaps: " + all, "ns /secrets: " + all, "ns autoscaling/horizontalpodautoscalers: " + all},
		gates:     map[string][]string{"Secret": {"tls.enabled"}, "HorizontalPodAutoscaler": {"autoscaling.enabled"}},
		noWarning: "could not render",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Derive(Options{Chart: ownChart(t, tt.chart), Values: tt.values, KubeVersion: tt.kube, Owner: Owner{Group: "charts.example.com", Resource: "things"}})
			if err != nil {
				t.Fatal(err)
			}
			got := ruleStrings(res.Rules)
			for _, r := range tt.rules {
				if !slices.Contains(got, r) {
					t.Errorf("no rule %q in\n  %s", r, strings.Join(got, "\n  "))
				}
			}
			for _, r := range tt.absent {
				if slices.Contains(got, r) {
					t.Errorf("rule %q granted", r)
				}
			}
			for kind, want := range tt.gates {
				i := slices.IndexFunc(res.Kinds, func(k Kind) bool { return k.Kind == kind && !k.ScannedOnly })
				if i < 0 {
					t.Errorf("no rendered %s in %v", kind, res.Kinds)
					continue
				}
				if !slices.Equal(res.Kinds[i].Gates, want) {
					t.Errorf("%s gates = %q, want %q", kind, res.Kinds[i].Gates, want)
				}
			}
			expectProblems(t, "warning", res.Warnings, tt.warnings)
			expectProblems(t, "error", res.Errors, tt.errors)
			if (res.Err() != nil) != (len(tt.errors) > 0) {
				t.Errorf("Err() = %v", res.Err())
			}
			for _, w := range res.Warnings {
				if tt.noWarning != "" && strings.Contains(w.String(), tt.noWarning) {
					t.Errorf("warning %q holds %q", w, tt.noWarning)
				}
			}
		})
	}
}

// expectProblems checks that each wanted text starts one of the problems.
func expectProblems(t *testing.T, what string, got []Problem, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p Problem) bool { return strings.HasPrefix(p.String(), w) }) {
			var all []string
			for _, p := range got {
				all = append(all, p.String())
			}
			t.Errorf("no %s starting %q in\n  %s", what, w, strings.Join(all, "\n  "))
		}
	}
}

// A value a template requires that the defaults lack names the value and
// the flags that give it.
func TestDeriveRequiredValue(t *testing.T) {
	_, err := Derive(Options{Chart: ownChart(t, "required"), Owner: Owner{Group: "charts.example.com", Resource: "things"}})
	var req *RequiredValueError
	if !errors.As(err, &req) || req.Path != "ui.message" || req.Chart != "required" {
		t.Fatalf("err = %v, want a RequiredValueError for ui.message", err)
	}
	want := `chart required needs value ui.message (required: "set ui.message"): pass --set ui.message=... or --values FILE`
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}
