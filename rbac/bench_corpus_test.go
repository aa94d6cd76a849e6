package rbac

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
)

func BenchmarkDeriveCorpus(b *testing.B) {
	name := os.Getenv("CORPUS_CHART")
	if name == "" {
		name = "argo-cd"
	}
	dir := filepath.Join("/work/shared/charts", name)
	c, err := chart.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"}, Backup: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res.Renders)), "renders")
	}
}
