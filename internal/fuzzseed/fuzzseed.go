package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"
)

// Files adds the content of every file the globs match to f's seed corpus.
func Files(f *testing.F, globs ...string) {
	f.Helper()
	for _, glob := range globs {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}
