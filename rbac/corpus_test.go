package rbac

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/internal/corpus"
)

func corpusChart(t testing.TB, name string) *chart.Chart {
	t.Helper()
	c, err := chart.Load(filepath.Join(corpus.Dir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ciValues are the values files a corpus chart's project tests with.
func ciValues(t *testing.T, c *chart.Chart) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, set := range corpus.CIValues(t, c.Path) {
		vals := set.Values
		if _, err := c.Render(chart.RenderOptions{Values: vals}); err != nil {
			// Helm cannot render it either (argo-cd's redis-ha values
			// need the subchart the corpus left out).
			t.Logf("%s: left out: %v", set.Name, err)
			continue
		}
		out = append(out, vals)
	}
	return out
}

// TestDeriveCorpus derives the RBAC of every chart of the corpus, with its
// defaults and each ci/ values file as samples, as init does: none fails,
// none renders a removed API with those values, and what issue 25 found
// wrong with each is right.
func TestDeriveCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 21 real-world charts")
	}
	type check struct {
		// rules must be derived; warnings must start some warning.
		rules, warnings []string
		// gates maps a kind to a gate it must have.
		gates map[string]string
	}
	checks := map[string]check{
		"kube-state-metrics": {
			rules: []string{"cluster rbac.authorization.k8s.io/clusterrolebindings: " + all},
			gates: map[string]string{"VerticalPodAutoscaler": "the cluster serves autoscaling.k8s.io/v1"},
		},
		"prometheus-node-exporter": {rules: []string{"cluster rbac.authorization.k8s.io/clusterrolebindings: " + all}},
		"prometheus":               {rules: []string{"cluster rbac.authorization.k8s.io/clusterrolebindings: " + all}},
		"traefik": {
			rules:    []string{"ns policy/poddisruptionbudgets: " + all},
			warnings: []string{"traefik/templates/poddisruptionbudget.yaml: policy/v1beta1 PodDisruptionBudget is no longer served since Kubernetes 1.25: use apiVersion policy/v1; the chart writes it only on clusters a check of .Capabilities picks"},
		},
		"prometheus-adapter": {
			rules:    []string{"cluster apiregistration.k8s.io/apiservices: " + all},
			warnings: []string{"prometheus-adapter/templates/custom-metrics-apiservice.yaml: apiregistration.k8s.io/v1beta1 APIService is no longer served"},
		},
		"bitnami-mongodb":    {warnings: []string{"mongodb/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served"}},
		"bitnami-postgresql": {warnings: []string{"postgresql/templates/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served"}},
		"bitnami-redis":      {warnings: []string{"redis/templates/master/psp.yaml: policy/v1beta1 PodSecurityPolicy is no longer served"}},
		"promtail":           {warnings: []string{"promtail/templates/podsecuritypolicy.yaml: policy/v1beta1 PodSecurityPolicy is no longer served"}},
		"argo-cd":            {warnings: []string{"the operator is cluster-admin in effect"}},
	}
	n, snapshots := 0, 0
	for _, dir := range corpus.Charts(t) {
		name := filepath.Base(dir)
		n++
		t.Run(name, func(t *testing.T) {
			c := corpusChart(t, name)
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"}, Backup: true, SampleValues: ciValues(t, c)})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			want := checks[name]
			got := ruleStrings(res.Rules)
			// No chart of the corpus annotates its pods for Velero: none
			// gets pods/exec for hooks (argo-workflows holds it for its own
			// Role, which grants it).
			for _, r := range res.Rules {
				if slices.ContainsFunc(r.Reasons, func(why string) bool { return strings.HasPrefix(why, HooksExtra.Name+": ") }) {
					t.Errorf("%s for a chart without backup hooks: %q", HooksExtra.Name, r.Reasons)
				}
			}
			if slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, "/volumesnapshotcontents:") }) {
				snapshots++
			}
			for _, r := range want.rules {
				if !slices.Contains(got, r) {
					t.Errorf("no rule %q", r)
				}
			}
			expectProblems(t, "warning", res.Warnings, want.warnings)
			for kind, gate := range want.gates {
				if !slices.ContainsFunc(res.Kinds, func(k Kind) bool { return k.Kind == kind && slices.Contains(k.Gates, gate) }) {
					t.Errorf("no %s gated by %q", kind, gate)
				}
			}
			for _, w := range res.Warnings {
				if strings.Contains(w.Message, "unrecognized type") {
					t.Errorf("warning %q", w)
				}
			}
		})
	}
	if n < 21 {
		t.Errorf("%d charts in the corpus, want 21", n)
	}
	t.Logf("with the backup API: pods/exec for 0 of %d charts, the snapshot API for %d (those that make claims)", n, snapshots)
}

// BenchmarkDeriveCorpus derives the RBAC of a corpus chart (argo-cd, the
// largest; CORPUS_CHART names another) as init does.
func BenchmarkDeriveCorpus(b *testing.B) {
	name := os.Getenv("CORPUS_CHART")
	if name == "" {
		name = "argo-cd"
	}
	c := corpusChart(b, name)
	for b.Loop() {
		res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"}, Backup: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res.Renders)), "renders")
	}
}
