package scaffold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// ValuesDir is the project directory that records, per API, the values
// given to init, create api or generate (--values, --set) for its chart:
// <ValuesDir>/<group>_<version>_<kind in lower case>.yaml, a plain values
// file. generate and LoadChart read it back, so that every command derives
// from the same values; the runtime does not (a CR's spec holds its values).
const ValuesDir = "helm-values"

// valuesHeader opens a values file of ValuesDir.
const valuesHeader = `# Values given to chartpilot for the chart of %s (--values, --set), merged
# over its values.yaml wherever chartpilot renders it: RBAC derivation, images,
# the sample CR, the CRD's schema. chartpilot generate reads this file; edit it,
# or pass --values/--set to generate, which replaces it. The operator does not
# read it at run time: a CR's spec holds its values. Kept with the project
# (and in version control): pass secrets another way.
`

// ValuesFile is the path, relative to the project, of the values recorded
// for a watch's chart.
func ValuesFile(w watches.Watch) string {
	return ValuesDir + "/" + w.Group + "_" + w.Version + "_" + strings.ToLower(w.Kind) + ".yaml"
}

// LoadChart loads the chart a watch of the project in dir serves, with the
// values recorded for it (ValuesFile) as its Values.
func LoadChart(dir string, w watches.Watch) (*chart.Chart, error) {
	c, err := chart.Load(filepath.Join(dir, w.Chart))
	if err != nil {
		return nil, err
	}
	if c.Values, err = readValues(dir, w); err != nil {
		return nil, err
	}
	return c, nil
}

// readValues reads the values recorded for w's chart; none is nil.
func readValues(dir string, w watches.Watch) (map[string]any, error) {
	p := filepath.Join(dir, filepath.FromSlash(ValuesFile(w)))
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// valuesFile is the content of w's ValuesFile recording values.
func valuesFile(w watches.Watch, values map[string]any) ([]byte, error) {
	out, err := yaml.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("values of %s: %w", w.Kind, err)
	}
	return append([]byte(fmt.Sprintf(valuesHeader, w.Kind)), out...), nil
}
