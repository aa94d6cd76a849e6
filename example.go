package chartpilot

// The repository's top level is this operator's project: rewrite its files
// (config/, helm-charts/, operator.mk, Dockerfile, bundle.Dockerfile...) as
// chartpilot writes them from the chart.
//go:generate go test -run TestRepositoryProject -update .

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed all:helm-charts/hello all:example/hello-0.2.0
var files embed.FS

// ExampleChart is the example chart's name.
const ExampleChart = "hello"

// WriteExampleChart writes the example chart, version 0.1.0, into dir.
func WriteExampleChart(dir string) error { return copyTree("helm-charts/"+ExampleChart, dir) }

// WriteExampleUpgrade writes the files of the chart's version 0.2.0 over a
// copy of version 0.1.0 in dir.
func WriteExampleUpgrade(dir string) error { return copyTree("example/hello-0.2.0", dir) }

func copyTree(root, dir string) error {
	return fs.WalkDir(files, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return fmt.Errorf("writing the example chart: %w", err)
		}
		return nil
	})
}
