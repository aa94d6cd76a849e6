package scorecard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/promrule"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/scaffold"
)

// insightsTest (chartpilot-insights): the project's PrometheusRule (or the
// bundle's, when it ships one) is one that Prometheus loads; the running operator exports, for every
// alm-example, the series of its release (and every series the alerts
// select); the CRD keeps the status' health and a ready release has no
// problem there; the CR has the events of its Helm actions.
func insightsTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "insights", func(ctx context.Context, c *clusterRun) error {
		if run.opts.OperatorFromImage {
			return errInsightsFromImage
		}
		rule, err := alertRule(run.bundle, run.opts.ProjectDir)
		if err != nil {
			return err
		}
		if err := healthInSchema(run.bundle); err != nil {
			return err
		}
		if c.metricsAddr, err = freeLoopbackAddress(); err != nil {
			return err
		}
		in, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
		if err != nil {
			return fmt.Errorf("installing: %w", err)
		}
		samples, err := scrapeMetrics(ctx, c.metricsAddr)
		if err != nil {
			return err
		}
		var errs []error
		for _, cr := range in.crs {
			errs = append(errs, c.checkInsights(ctx, cr, samples))
		}
		errs = append(errs, ruleMetricsExported(rule, samples))
		return errors.Join(errs...)
	})
}

// errInsightsFromImage: the insights test scrapes the metrics of an
// operator in this process.
var errInsightsFromImage = errors.New("the insights test scrapes the metrics of the operator in this process: run it without the operator from its image (--operator-from-image)")

// alertRule is the operator's PrometheusRule, loaded as Prometheus would:
// the bundle's when it ships one (../prometheus enabled in config/default),
// else the project's config/prometheus/alerts.yaml. Bundles leave it out by
// default: OLM fails to install one holding monitoring objects on a cluster
// without prometheus-operator.
func alertRule(b *Bundle, projectDir string) (*unstructured.Unstructured, error) {
	rule, err := bundleRule(b)
	if err != nil {
		return nil, err
	}
	if rule == nil {
		if rule, err = projectRule(projectDir); err != nil {
			return nil, err
		}
	}
	if err := promrule.Validate(rule); err != nil {
		return nil, err
	}
	return rule, nil
}

// bundleRule is the bundle's PrometheusRule, nil when it ships none.
func bundleRule(b *Bundle) (*unstructured.Unstructured, error) {
	m, err := b.manifests()
	if err != nil {
		return nil, err
	}
	var rule *unstructured.Unstructured
	for _, o := range m.Objects {
		if isPrometheusRule(o) {
			if rule != nil {
				return nil, fmt.Errorf("the bundle has two PrometheusRules, %s and %s", rule.GetName(), o.GetName())
			}
			rule = o
		}
	}
	return rule, nil
}

// projectRule is the PrometheusRule of the project's alerts file.
func projectRule(projectDir string) (*unstructured.Unstructured, error) {
	path := filepath.Join(projectDir, filepath.FromSlash(scaffold.AlertsFile))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("neither the bundle nor the project (%s) has a PrometheusRule: `chartpilot generate` writes one to %s", projectDir, scaffold.AlertsFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the alerts: %w", err)
	}
	rule := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &rule.Object); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !isPrometheusRule(rule) {
		return nil, fmt.Errorf("%s holds a %s, not a %s.%s", path, rule.GetObjectKind().GroupVersionKind(), promrule.Kind, promrule.Group)
	}
	return rule, nil
}

func isPrometheusRule(o *unstructured.Unstructured) bool {
	return o.GetKind() == promrule.Kind && o.GroupVersionKind().Group == promrule.Group
}

// healthInSchema checks that every CRD's status schema keeps the health
// the runtime writes: the API server prunes a field its schema lacks.
func healthInSchema(b *Bundle) error {
	crds, err := b.v1CRDs()
	if err != nil {
		return err
	}
	var errs []error
	kinds := map[string]bool{}
	for _, crd := range crds {
		kinds[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = true
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			// Backups and restores (of a kind of the bundle) make no
			// release: no health.
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			if w, ok := backupapi.Watched(gvk); !v.Served || ok && kinds[w.Group+"/"+w.Kind] {
				continue
			}
			var props map[string]apiextensionsv1.JSONSchemaProps
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				props = v.Schema.OpenAPIV3Schema.Properties["status"].Properties
			}
			if _, ok := props["health"]; !ok {
				errs = append(errs, fmt.Errorf("CRD %s %s: status has no health property: the API server would prune the health the operator writes (chartpilot generate rewrites the CRD)", crd.Name, v.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// checkInsights checks one CR: its series, its status health, its events.
func (c *clusterRun) checkInsights(ctx context.Context, cr *unstructured.Unstructured, samples model.Vector) error {
	id := cr.GetKind() + " " + cr.GetName()
	labels := map[string]string{releasemetrics.LabelKind: cr.GetKind(), releasemetrics.LabelNamespace: c.ns, releasemetrics.LabelName: cr.GetName()}
	var errs []error
	expect := func(metric string, extra map[string]string, ok func(float64) bool, want string) {
		l := mergeLabels(labels, extra)
		v, found := releasemetrics.Sample(samples, metric, l)
		switch {
		case !found:
			errs = append(errs, fmt.Errorf("%s: the operator exports no %s%v", id, metric, l))
		case !ok(v):
			errs = append(errs, fmt.Errorf("%s: %s = %v, want %s", id, metric, v, want))
		}
	}
	expect(releasemetrics.Revision, nil, func(v float64) bool { return v >= 1 }, "a revision")
	expect(releasemetrics.Ready, nil, func(v float64) bool { return v == 1 }, "1 (ready)")
	expect(releasemetrics.Failed, nil, func(v float64) bool { return v == 0 }, "0")
	expect(releasemetrics.UnhealthyObjects, nil, func(v float64) bool { return v == 0 }, "0")
	expect(releasemetrics.DriftRepairs, nil, func(float64) bool { return true }, "")
	expect(releasemetrics.Reconciles, map[string]string{releasemetrics.LabelResult: releasemetrics.ResultSuccess}, func(v float64) bool { return v >= 1 }, "at least 1")
	expect(releasemetrics.HelmActions, map[string]string{releasemetrics.LabelAction: "install", releasemetrics.LabelResult: releasemetrics.ResultSuccess}, func(v float64) bool { return v >= 1 }, "at least 1")
	expect(releasemetrics.ReconcileDuration+"_count", nil, func(v float64) bool { return v >= 1 }, "at least 1")
	expect(releasemetrics.LastSuccessTimestamp, nil, func(v float64) bool {
		return time.Since(time.Unix(int64(v), 0)) < 8*c.opts.WaitTime
	}, "during the test")

	ri, err := c.resource(cr.GroupVersionKind(), c.ns)
	if err != nil {
		return err
	}
	cur, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if h, found, _ := unstructured.NestedMap(cur.Object, "status", "health"); found {
		errs = append(errs, fmt.Errorf("%s is Ready but its status.health lists problems: %v", id, h))
	}
	// Events are sent apart from the reconcile: give them a moment.
	var reasons []string
	err = c.poll(ctx, func(ctx context.Context) (bool, error) {
		events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + cr.GetName()})
		if err != nil {
			return false, nil
		}
		reasons = reasons[:0]
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		return contains(reasons, reconciler.EventInstalled), nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: no %s event (events: %v)", id, reconciler.EventInstalled, reasons))
	}
	if len(errs) == 0 {
		c.res.logf("%s: series, status health and events as expected (events %v)", id, reasons)
	}
	return errors.Join(errs...)
}

// ruleMetricsExported checks that every series the alerts select (but up,
// which Prometheus makes) is one the operator exports.
func ruleMetricsExported(rule *unstructured.Unstructured, samples model.Vector) error {
	names, err := promrule.Metrics(rule)
	if err != nil {
		return err
	}
	exported := map[string]bool{}
	for _, s := range samples {
		exported[string(s.Metric[model.MetricNameLabel])] = true
	}
	var missing []string
	for _, n := range names {
		if n != "up" && !exported[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("PrometheusRule %s selects %s, which the operator does not export", rule.GetName(), strings.Join(missing, ", "))
	}
	return nil
}

func freeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a port for the operator's metrics: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scrapeMetrics reads the operator's metrics endpoint as Prometheus would.
func scrapeMetrics(ctx context.Context, addr string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the operator's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the operator's metrics: %s", resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var families []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("reading the operator's metrics: %w", err)
		}
		families = append(families, mf)
	}
	return expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, families...)
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
