package scaffold

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/internal/corpus"
)

// TestCorpusSamplesAccepted: for every chart of the corpus, the sample CR
// init writes is valid YAML, and a real API server with the CRD init
// writes accepts it with nothing pruned (what it keeps is what was sent);
// the same with each of the chart's ci/*.yaml files given as values
// (init --values), which the sample merges into values.yaml's text.
func TestCorpusSamplesAccepted(t *testing.T) {
	charts := corpus.Charts(t)
	logf.SetLogger(logr.Discard())
	cfg := clustertest.StartAPIServer(t, nil)
	ns := "samples"
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{} // the CRDs installed, as JSON
	for _, dir := range charts {
		name := filepath.Base(dir)
		sets := append([]corpus.ValueSet{{Name: "values.yaml"}}, corpus.CIValues(t, dir)...)
		for _, vs := range sets {
			t.Run(name+"/"+vs.Name, func(t *testing.T) {
				c, err := chart.Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				c.Values = vs.Values
				checkSample(t, cfg, ns, c, dnsLabelOf(name)+".samples.test", installed)
			})
		}
	}
}

// checkSample installs the CRD init writes for c (in group, or a group of
// its own when the given values changed it) and creates the sample CR init
// writes: it must be valid YAML, accepted, and kept as sent.
func checkSample(t *testing.T, cfg *rest.Config, ns string, c *chart.Chart, group string, installed map[string]bool) {
	t.Helper()
	kind := KindFromChartName(c.Name())
	rd := resourceData{Group: group, Version: "v1alpha1", Kind: kind, Plural: crdschema.Plural(kind), Lower: strings.ToLower(kind)}
	crd, _, err := crdschema.CRD(c, crdschema.Options{Group: rd.Group, Version: rd.Version, Kind: rd.Kind, Plural: rd.Plural})
	if err != nil {
		t.Fatal(err)
	}
	key, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if !installed[string(key)] {
		if installed[group] {
			// The values given widened the schema: a CRD of its own.
			rd.Group = fmt.Sprintf("v%d.%s", len(installed), group)
			if crd, _, err = crdschema.CRD(c, crdschema.Options{Group: rd.Group, Version: rd.Version, Kind: rd.Kind, Plural: rd.Plural}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
			t.Fatalf("the API server refused the CRD: %v", err)
		}
		installed[string(key)], installed[group] = true, true
	}
	data, err := sampleCR(c, rd)
	if err != nil {
		t.Fatal(err)
	}
	var sample unstructured.Unstructured
	if err := yaml.Unmarshal(data, &sample.Object); err != nil {
		t.Fatalf("the sample is not valid YAML: %v", err)
	}
	crs := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: rd.Group, Version: rd.Version, Resource: rd.Plural}).Namespace(ns)
	created, err := crs.Create(context.Background(), &sample, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the API server refused the sample: %v", err)
	}
	t.Cleanup(func() {
		if err := crs.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	if lost := corpus.Lost(sample.Object["spec"], created.Object["spec"], "spec"); len(lost) > 0 {
		t.Errorf("the API server pruned or changed %s", strings.Join(lost, ", "))
	}
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsLabelOf makes a directory name a DNS label.
func dnsLabelOf(s string) string {
	return strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}
