package render

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// loadBenchCatalog generates the benchmark catalog and loads it with
// declcfg.
func loadBenchCatalog(tb testing.TB) declcfg.DeclarativeConfig {
	tb.Helper()
	cfg, err := declcfg.LoadFS(tb.Context(), os.DirFS(catalogtest.BenchCatalog(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	return *cfg
}

// TestWritersMatchDeclcfgOnBenchCatalog: fbc's writers, alone and through
// writeConcurrently, write the generated catalog byte for byte as
// declcfg's writers do.
func TestWritersMatchDeclcfgOnBenchCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 16 MiB catalog")
	}
	cfg := loadBenchCatalog(t)
	for _, tc := range []struct {
		format        fbc.Format
		fbcWrite, ref func(declcfg.DeclarativeConfig, io.Writer) error
	}{
		{fbc.FormatYAML, fbc.WriteYAML, declcfg.WriteYAML},
		{fbc.FormatJSON, fbc.WriteJSON, declcfg.WriteJSON},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			var want, got, concurrent bytes.Buffer
			if err := tc.ref(cfg, &want); err != nil {
				t.Fatal(err)
			}
			if err := tc.fbcWrite(cfg, &got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("fbc writer: output differs from declcfg's")
			}
			// writeConcurrently empties the config it is given.
			c := cfg
			if err := writeConcurrently(t.Context(), &c, tc.format, &concurrent); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(concurrent.Bytes(), want.Bytes()) {
				t.Errorf("writeConcurrently: output differs from declcfg's")
			}
		})
	}
}

// BenchmarkWriteYAML compares fbc.WriteYAML with declcfg.WriteYAML on the
// generated catalog, on one goroutine.
func BenchmarkWriteYAML(b *testing.B) {
	benchmarkWriters(b, fbc.WriteYAML, declcfg.WriteYAML)
}

// BenchmarkWriteJSON compares fbc.WriteJSON with declcfg.WriteJSON.
func BenchmarkWriteJSON(b *testing.B) {
	benchmarkWriters(b, fbc.WriteJSON, declcfg.WriteJSON)
}

func benchmarkWriters(b *testing.B, fbcWrite, declcfgWrite func(declcfg.DeclarativeConfig, io.Writer) error) {
	cfg := loadBenchCatalog(b)
	for _, w := range []struct {
		name  string
		write func(declcfg.DeclarativeConfig, io.Writer) error
	}{{"declcfg", declcfgWrite}, {"fbc", fbcWrite}} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := w.write(cfg, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
