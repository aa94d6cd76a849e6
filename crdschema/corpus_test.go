package crdschema

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/corpus"
)

// corpusKnownFailures are the values sets of the corpus the CRD still
// refuses or prunes, by "chart/file", with the reason: the test fails on
// any other, and reports the ones listed that now pass.
var corpusKnownFailures = map[string]string{}

// TestCorpusValueSetsAccepted is item 2 of issue 25's acceptance: for every
// chart of the corpus, its default values and every ci/*.yaml values file
// it ships, as the spec of a CR of the CRD chartpilot generates for it,
// are accepted by a real API server with nothing pruned. The pass rate
// must stay at 95% or more, and every failure left is listed above.
func TestCorpusValueSetsAccepted(t *testing.T) {
	charts := corpus.Charts(t)
	logf.SetLogger(logr.Discard())
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{ControlPlaneStartTimeout: 3 * time.Minute})
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := "corpus"
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sets, passed int
	var failures []string
	for _, dir := range charts {
		name := filepath.Base(dir)
		c, err := chart.Load(dir)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		group := dnsName(name) + ".corpus.test"
		crd, _, err := CRD(c, Options{Group: group, Version: "v1", Kind: "Values"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
			t.Errorf("%s: the API server refused the CRD: %v", name, err)
			continue
		}
		crs := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: crd.Spec.Names.Plural}).Namespace(ns)
		valueSets := append([]corpus.ValueSet{{Name: "values.yaml", Values: c.Helm.Values}}, corpus.CIValues(t, dir)...)
		// A vendored subchart's own ci/ files, as the parent's values
		// under the subchart's key.
		for _, sub := range chart.Subcharts(c.Helm) {
			subDir := filepath.Join(dir, "charts", sub.Chart.Name())
			for _, vs := range corpus.CIValues(t, subDir) {
				valueSets = append(valueSets, corpus.ValueSet{Name: "charts/" + sub.Chart.Name() + "/" + vs.Name, Values: map[string]any{sub.Key: vs.Values}})
			}
		}
		for _, vs := range valueSets {
			sets++
			key := name + "/" + vs.Name
			err := acceptedUnpruned(crs, group+"/v1", vs.Values)
			_, known := corpusKnownFailures[key]
			switch {
			case err == nil:
				passed++
				if known {
					t.Logf("%s passes now: take it off corpusKnownFailures", key)
				}
			case known:
				failures = append(failures, fmt.Sprintf("%s: %s (%v)", key, corpusKnownFailures[key], err))
			default:
				failures = append(failures, key+": "+err.Error())
				t.Errorf("%s: %v", key, err)
			}
		}
	}
	rate := float64(passed) / float64(sets)
	t.Logf("%d of %d values sets accepted unpruned (%.1f%%)", passed, sets, 100*rate)
	for _, f := range failures {
		t.Logf("not accepted: %s", f)
	}
	if rate < 0.95 {
		t.Errorf("%.1f%% of the corpus's values sets accepted, want at least 95%%", 100*rate)
	}
}

// acceptedUnpruned creates a CR with spec and says how the API server
// refused or pruned it.
func acceptedUnpruned(crs dynamic.ResourceInterface, apiVersion string, spec map[string]any) error {
	if spec == nil {
		spec = map[string]any{}
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Values",
		"metadata": map[string]any{"generateName": "v-"}, "spec": spec}}
	created, err := crs.Create(context.Background(), cr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	defer crs.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) //nolint:errcheck // best effort
	if lost := corpus.Lost(spec, created.Object["spec"], "spec"); len(lost) > 0 {
		return fmt.Errorf("pruned or changed: %s", strings.Join(lost, ", "))
	}
	return nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName makes a chart's name a DNS label.
func dnsName(s string) string {
	return strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
}
