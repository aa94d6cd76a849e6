package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster"
)

// serverRequests are the API server's requests by verb and resource: how
// many, and the seconds it spent answering them (its own
// apiserver_request_duration_seconds).
type serverRequests map[string]serverCost

type serverCost struct {
	count   uint64
	seconds float64
}

// takeServerRequests scrapes the API server's metrics.
func takeServerRequests(b *testing.B, c *cluster.Cluster) serverRequests {
	b.Helper()
	cfg, err := c.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatalf("the API server's metrics: %v", err)
	}
	out := serverRequests{}
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["verb"] == "WATCH" || l["verb"] == "CONNECT" {
			continue // long-running: their durations are how long they stayed open
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		c := out[key]
		c.count += m.GetHistogram().GetSampleCount()
		c.seconds += m.GetHistogram().GetSampleSum()
		out[key] = c
	}
	return out
}

// since is what the server answered since before, per CR, the most
// costly first.
func (now serverRequests) since(before serverRequests, crs int) string {
	type row struct {
		key string
		serverCost
	}
	var rows []row
	for k, c := range now {
		d := serverCost{count: c.count - before[k].count, seconds: c.seconds - before[k].seconds}
		if d.count > 0 {
			rows = append(rows, row{k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seconds > rows[j].seconds })
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %.2f/CR %.0fms/CR", r.key, float64(r.count)/float64(crs), 1000*r.seconds/float64(crs)))
	}
	return strings.Join(parts, "; ")
}
