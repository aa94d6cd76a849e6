package releasemetrics

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
)

func newRecorder(reg prometheus.Registerer) *Recorder {
	return New(Options{Kind: "App", RepairAction: "repair", Registerer: reg})
}

func TestRecord(t *testing.T) {
	at := time.Unix(1700000000, 0)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	tests := []struct {
		name string
		obs  []Observation
		// want maps a metric to its value for the CR (counters summed over
		// the extra labels).
		want map[string]float64
	}{{
		name: "an install that left the objects getting ready",
		obs:  []Observation{{Duration: 2 * time.Second, Actions: []Action{{Name: "install"}}, Revision: 1, Unhealthy: 2, At: at}},
		want: map[string]float64{Reconciles: 1, HelmActions: 1, Revision: 1, Ready: 0, Drifted: 0, Failed: 0,
			LastSuccessTimestamp: 1700000000, DriftRepairs: 0, UnhealthyObjects: 2},
	}, {
		name: "a failed upgrade rolled back: failed, the last success kept",
		obs: []Observation{
			{Actions: []Action{{Name: "install"}}, Revision: 1, Ready: true, At: at},
			{Err: errors.New("boom"), Actions: []Action{{Name: "upgrade", Err: errors.New("boom")}, {Name: "rollback"}}, Revision: 3, At: at.Add(time.Minute)},
		},
		want: map[string]float64{Reconciles: 2, HelmActions: 3, Revision: 3, Ready: 0, Failed: 1, LastSuccessTimestamp: 1700000000},
	}, {
		name: "a repair counts, drifted until the next reconcile",
		obs:  []Observation{{Actions: []Action{{Name: "repair"}}, Drifted: true, Revision: 1, Ready: true, At: at}},
		want: map[string]float64{DriftRepairs: 1, Drifted: 1, Ready: 1},
	}, {
		name: "an unhealthy upgrade rolled back: counted, failed while held back",
		obs: []Observation{
			{Actions: []Action{{Name: "rollback"}}, UnhealthyRollbacks: 1, HeldBack: true, Revision: 3, Ready: true, At: at},
			{HeldBack: true, Revision: 3, Ready: true, At: at.Add(time.Minute)},
		},
		want: map[string]float64{UnhealthyRollbacks: 1, Failed: 1, Revision: 3, LastSuccessTimestamp: 1700000060},
	}, {
		name: "no rollback yet: the counter starts at 0",
		obs:  []Observation{{Revision: 1, At: at}},
		want: map[string]float64{UnhealthyRollbacks: 0, Failed: 0},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			r := newRecorder(reg)
			for _, o := range tt.obs {
				r.Record(key, o)
			}
			for metric, want := range tt.want {
				if got := sum(t, reg, metric, `name="a"`); got != want {
					t.Errorf("%s = %v, want %v", metric, got, want)
				}
			}
			r.Forget(key)
			if n := countSeries(t, reg); n != 0 {
				t.Errorf("%d series left after Forget", n)
			}
		})
	}
}

// Two kinds share the collectors without clashing, and forgetting a CR of
// one leaves the other's series.
func TestKindsShareCollectors(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := New(Options{Kind: "App", Registerer: reg})
	b := New(Options{Kind: "Cache", Registerer: reg})
	key := types.NamespacedName{Namespace: "ns", Name: "x"}
	a.Record(key, Observation{Revision: 1})
	b.Record(key, Observation{Revision: 2})
	a.Forget(key)
	if got := sum(t, reg, Revision, `kind="Cache"`); got != 2 {
		t.Errorf("Cache's revision = %v, want 2", got)
	}
	if got := sum(t, reg, Revision, `kind="App"`); got != 0 {
		t.Errorf("App's revision still exported: %v", got)
	}
}

// The endpoint grows with the CRs only: measured at 1000 CRs, each having
// installed, upgraded and repaired once, every CR's series exported.
func TestEndpointSizeAt1000CRs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(Options{Kind: "App", RepairAction: "repair", Registerer: reg, SeriesLimit: -1})
	for i := range 1000 {
		key := types.NamespacedName{Namespace: fmt.Sprintf("team-%02d", i%50), Name: fmt.Sprintf("app-%04d", i)}
		for _, a := range []string{"install", "upgrade", "repair"} {
			r.Record(key, Observation{Duration: 300 * time.Millisecond, Actions: []Action{{Name: a}}, Revision: 2, Ready: true, At: time.Now()})
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	series := countSeries(t, reg)
	t.Logf("1000 CRs: %d series, %d KiB in the text format (%.0f series, %.0f bytes per CR)", series, buf.Len()/1024, float64(series)/1000, float64(buf.Len())/1000)
	if perCR := series / 1000; perCR > 25 {
		t.Errorf("%d series per CR: the labels grow with more than the CRs", perCR)
	}
}

func sum(t *testing.T, reg *prometheus.Registry, metric, match string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if mf.GetName() == metric {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
	}
	var total float64
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, match) {
			continue
		}
		var v float64
		fields := strings.Fields(line)
		if _, err := fmt.Sscan(fields[len(fields)-1], &v); err != nil {
			t.Fatal(err)
		}
		total += v
	}
	return total
}

// countSeries counts the per-release series.
func countSeries(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	n, err := testutil.GatherAndCount(reg, Names...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// What the series of a CR hold in memory between scrapes: its numbers, not
// its series (8 KiB per CR as the client library's vectors).
func TestHeldPerCR(t *testing.T) {
	r := newRecorder(prometheus.NewRegistry())
	keys := make([]types.NamespacedName, 1000)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "team", Name: fmt.Sprintf("app-%04d", i)}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for _, key := range keys {
		r.Record(key, Observation{Duration: 300 * time.Millisecond, Actions: []Action{{Name: "install"}}, Revision: 1, Ready: true, At: time.Now()})
	}
	perCR := float64(heap()-before) / float64(len(keys))
	t.Logf("%.0f bytes per CR", perCR)
	if perCR > 1024 {
		t.Errorf("%.0f bytes held per CR, want under 1 KiB", perCR)
	}
	runtime.KeepAlive(r)
}
