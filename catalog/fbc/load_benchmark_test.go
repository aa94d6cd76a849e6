package fbc

import (
	"bytes"
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
	cfg := sampleCatalog(b, 200, 25)
	for _, p := range cfg.Packages {
		pkg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{p}}
		for _, c := range cfg.Channels {
			if c.Package == p.Name {
				pkg.Channels = append(pkg.Channels, c)
			}
		}
		for _, bd := range cfg.Bundles {
			if bd.Package == p.Name {
				pkg.Bundles = append(pkg.Bundles, bd)
			}
		}
		var buf bytes.Buffer
		if err := declcfg.WriteYAML(pkg, &buf); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, p.Name), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.Name, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
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
