package chartload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// ErrChartAPI is wrapped by the error of a chart whose Chart.yaml declares
// an apiVersion other than v1 or v2.
var ErrChartAPI = errors.New("unsupported chart API version")

// Load loads the chart directory or packaged chart at path.
func Load(path string) (*chart.Chart, error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, err
	}
	if err := Check(ch, path); err != nil {
		return nil, err
	}
	return ch, nil
}

// Check refuses a chart, or a subchart of it, whose API version is
// neither v1 nor v2, naming its Chart.yaml (below path, the chart's
// directory or archive).
func Check(ch *chart.Chart, path string) error {
	switch v := ch.Metadata.APIVersion; v {
	case chart.APIVersionV1, chart.APIVersionV2:
	default:
		return fmt.Errorf("%s: apiVersion %q: %w: chartpilot installs charts of API v1 and v2 (Helm 4's chart API v3 is experimental); set apiVersion: v2", chartfile(ch, path), v, ErrChartAPI)
	}
	for _, d := range ch.Dependencies() {
		if err := Check(d, path); err != nil {
			return err
		}
	}
	return nil
}

// chartfile names ch's Chart.yaml for an error message.
func chartfile(ch *chart.Chart, path string) string {
	rel := "Chart.yaml"
	for c := ch; c.Parent() != nil; c = c.Parent() {
		rel = filepath.Join("charts", c.Name(), rel)
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return path + " (" + rel + ")"
	}
	return filepath.Join(path, rel)
}
