package render

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

func BenchmarkRender(b *testing.B) {
	dir := catalogtest.BenchCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(b.Context(), io.Discard, os.DirFS(dir), Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCatalogSize(b, dir)
}

// reportCatalogSize records the catalog's size in bytes.
func reportCatalogSize(b *testing.B, dir string) {
	var size int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	b.ReportMetric(float64(size)/(1<<20), "catalog-MiB")
}
