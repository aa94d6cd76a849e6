package releasemetrics

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
)

// healthy and the others are what a CR's last reconcile left.
var (
	healthy   = Observation{Duration: 300 * time.Millisecond, Actions: []Action{{Name: "install"}}, Revision: 1, Ready: true}
	failing   = Observation{Duration: time.Second, Err: errors.New("boom"), Actions: []Action{{Name: "upgrade", Err: errors.New("boom")}}, Revision: 1, Ready: true}
	notReady  = Observation{Duration: time.Second, Revision: 1, Unhealthy: 1}
	drifted   = Observation{Duration: time.Second, Revision: 1, Ready: true, Drifted: true, Actions: []Action{{Name: "repair"}}}
	suspended = Observation{Duration: time.Second, Revision: 1, Ready: true, RepairSuspended: true}
)

// Above the series limit, only the CRs that need attention keep their
// per-release series, at most the limit of them, the same ones each
// scrape; the series per kind always count every CR.
func TestSeriesLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		// crs are the observations of the CRs, one each, named cr-000...
		crs []Observation
		// exported are the names of the CRs whose series are exported.
		exported []string
	}{
		{name: "under the limit: every CR", limit: 3, crs: []Observation{healthy, healthy, failing}, exported: []string{"cr-000", "cr-001", "cr-002"}},
		{name: "above it, all healthy: none", limit: 2, crs: []Observation{healthy, healthy, healthy}},
		{name: "above it: those that need attention", limit: 2, crs: []Observation{healthy, failing, healthy, notReady, healthy},
			exported: []string{"cr-001", "cr-003"}},
		{name: "more need attention than the limit: the first by name", limit: 2, crs: []Observation{drifted, suspended, failing, healthy},
			exported: []string{"cr-000", "cr-001"}},
		{name: "no limit", limit: -1, crs: []Observation{healthy, healthy, healthy}, exported: []string{"cr-000", "cr-001", "cr-002"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			r := New(Options{Kind: "App", RepairAction: "repair", Registerer: reg, SeriesLimit: tt.limit})
			var ready, failed float64
			for i, o := range tt.crs {
				r.Record(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("cr-%03d", i)}, o)
				ready += bit(o.Ready)
				failed += bit(o.Err != nil)
			}
			// Twice: the same CRs each scrape.
			for range 2 {
				if got := exportedNames(t, reg); !slices.Equal(got, tt.exported) {
					t.Errorf("exported %q, want %q", got, tt.exported)
				}
			}
			for metric, want := range map[string]float64{KindReleases: float64(len(tt.crs)), KindReady: ready, KindFailed: failed,
				KindReleasesExported: float64(len(tt.exported)), KindReconciles: float64(len(tt.crs))} {
				if got := sum(t, reg, metric, `kind="App"`); got != want {
					t.Errorf("%s = %v, want %v", metric, got, want)
				}
			}
		})
	}
}

// The counters per kind count the CRs gone too: they never go down.
func TestKindCountersOutliveCRs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(Options{Kind: "App", RepairAction: "repair", Registerer: reg})
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	r.Record(key, drifted)
	r.Record(key, failing)
	r.Forget(key)
	for metric, want := range map[string]float64{KindReconciles: 2, KindDriftRepairs: 1, KindReleases: 0, KindFailed: 0} {
		if got := sum(t, reg, metric, `kind="App"`); got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(families, func(mf *dto.MetricFamily) bool { return mf.GetName() == KindReconcileDuration })
	if i < 0 || families[i].GetMetric()[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("%s does not count the 2 reconciles of the CR gone", KindReconcileDuration)
	}
}

// exportedNames are the CRs that have a Ready series, sorted.
func exportedNames(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range families {
		if mf.GetName() != Ready {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelName {
					names = append(names, l.GetValue())
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// BenchmarkScrape measures one scrape of 5000 CRs (bytes in the text
// format, series), each installed, upgraded and repaired once, with the Go
// runtime's and the process's series that every operator exports: every
// CR's series (no limit, as before the limit), the default limit with a
// healthy fleet, and the default limit with every CR failing (the worst
// case). Run it with
//
//	go test -run '^$' -bench Scrape -benchtime 1x ./operator/releasemetrics/
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int
		last  Observation
	}{
		{name: "every-CR", limit: -1, last: healthy},
		{name: "default-limit", last: healthy},
		{name: "default-limit-all-failing", last: failing},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			r := New(Options{Kind: "App", RepairAction: "repair", Registerer: reg, SeriesLimit: bc.limit})
			const crs = 5000
			for i := range crs {
				key := types.NamespacedName{Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("app-%05d", i)}
				for _, a := range []string{"install", "upgrade", "repair"} {
					r.Record(key, Observation{Duration: 300 * time.Millisecond, Actions: []Action{{Name: a}}, Revision: 2, Ready: true, At: time.Now()})
				}
				last := bc.last
				last.At = time.Now()
				r.Record(key, last)
			}
			var size, series int
			for b.Loop() {
				size, series = scrapeSize(b, reg)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
			b.ReportMetric(float64(size)/crs, "bytes/CR")
			b.ReportMetric(float64(series), "series")
			b.Logf("%s: %d CRs, one scrape %.2f MiB, %d series", bc.name, crs, float64(size)/(1<<20), series)
		})
	}
}

// scrapeSize is the size of one scrape in the text format, and its series.
func scrapeSize(b *testing.B, reg *prometheus.Registry) (int, int) {
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			b.Fatal(err)
		}
	}
	series := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			series++
		}
	}
	return buf.Len(), series
}
