package render

import (
	"io"
	"os"
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
	catalogtest.ReportCatalogSize(b, dir)
}
