package validate

import (
	"os"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

func BenchmarkValidate(b *testing.B) {
	dir := catalogtest.BenchCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := FS(b.Context(), dir, os.DirFS(dir)); err != nil {
			b.Fatal(err)
		}
	}
}
