package fbc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// BenchmarkLoad loads a catalog of 200 packages x 25 inline bundles (one
// YAML file per package, as declcfg writes them) with this package and
// with declcfg, in the same run.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	for path, data := range packageFiles(b, sampleCatalog(b, 200, 25), false) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, l := range []struct {
		name string
		load func(context.Context) (*declcfg.DeclarativeConfig, error)
	}{
		{"fbc", func(ctx context.Context) (*declcfg.DeclarativeConfig, error) { return Load(ctx, os.DirFS(dir)) }},
		{"declcfg", func(ctx context.Context) (*declcfg.DeclarativeConfig, error) {
			return declcfg.LoadFS(ctx, os.DirFS(dir))
		}},
	} {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, err := l.load(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				if len(cfg.Bundles) != 200*25 {
					b.Fatalf("%d bundles", len(cfg.Bundles))
				}
			}
		})
	}
}
