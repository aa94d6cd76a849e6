package scorecard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/watches"
)

// valueSet is a CR the upgrade test makes from a set of values the
// project knows, and where the values come from.
type valueSet struct {
	cr     *unstructured.Unstructured
	source string
}

// valueSets are the CRs of the values sets project knows besides the
// bundle's alm-examples (have): each CR of its config/samples, and for
// each chart of its watches.yaml a CR per file of the chart's ci/
// directory (the values sets chart-testing installs), named
// <kind>-ci-<file>. Samples of other kinds (backups...) and those whose
// kind and name an alm-example has are left out.
func valueSets(project string, have []*unstructured.Unstructured) ([]valueSet, error) {
	data, err := os.ReadFile(filepath.Join(project, "watches.yaml"))
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", project, err)
	}
	ws, err := watches.Decode(data, filepath.Join(project, "watches.yaml"))
	if err != nil {
		return nil, err
	}
	watched := map[schema.GroupKind]bool{}
	for _, w := range ws {
		watched[w.GroupVersionKind().GroupKind()] = true
	}
	taken := map[string]bool{}
	for _, cr := range have {
		taken[cr.GroupVersionKind().GroupKind().String()+"/"+cr.GetName()] = true
	}
	var out []valueSet
	add := func(cr *unstructured.Unstructured, source string) {
		key := cr.GroupVersionKind().GroupKind().String() + "/" + cr.GetName()
		if !taken[key] {
			taken[key] = true
			out = append(out, valueSet{cr: cr, source: source})
		}
	}
	samples, err := projectSamples(filepath.Join(project, "config", "samples"))
	if err != nil {
		return nil, err
	}
	for _, s := range samples {
		if watched[s.cr.GroupVersionKind().GroupKind()] {
			add(s.cr, s.source)
		}
	}
	for _, w := range ws {
		sets, err := ciValues(project, w)
		if err != nil {
			return nil, err
		}
		for _, s := range sets {
			add(s.cr, s.source)
		}
	}
	return out, nil
}

// projectSamples reads every object of the YAML files of dir (absent: none).
func projectSamples(dir string) ([]valueSet, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []valueSet
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for i := 0; ; i++ {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", p, i+1, err)
			}
			if u.GetKind() == "" || u.GetName() == "" {
				continue // a kustomization, an empty document
			}
			out = append(out, valueSet{cr: u, source: p})
		}
	}
	return out, nil
}

// ciValues are the CRs of w's chart's ci/*.yaml (and *.yml) values files.
func ciValues(project string, w watches.Watch) ([]valueSet, error) {
	chartDir := w.Chart
	if !filepath.IsAbs(chartDir) {
		chartDir = filepath.Join(project, chartDir)
	}
	var paths []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		found, err := filepath.Glob(filepath.Join(chartDir, "ci", pat))
		if err != nil {
			return nil, err
		}
		paths = append(paths, found...)
	}
	slices.Sort(paths)
	var out []valueSet
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if values == nil {
			values = map[string]any{}
		}
		cr := &unstructured.Unstructured{Object: map[string]any{"spec": values}}
		cr.SetGroupVersionKind(w.GroupVersionKind())
		cr.SetName(ciName(w.Kind, filepath.Base(p)))
		out = append(out, valueSet{cr: cr, source: p})
	}
	return out, nil
}

var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// ciName is the CR name of a ci values file: <kind>-ci-<file without
// .yaml and -values>, a DNS label short enough for a release name.
func ciName(kind, file string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(file), ".yaml"), ".yml")
	base = strings.TrimSuffix(base, "-values")
	name := strings.ToLower(kind) + "-ci-" + notName.ReplaceAllString(base, "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-")
}

// lostFields lists the paths of before (a CR's spec as stored before an
// upgrade) that after lacks or holds another value at: what the new CRD
// pruned or changed. Fields after adds (new defaults) are not losses.
func lostFields(path string, before, after any) []string {
	bm, bok := before.(map[string]any)
	am, aok := after.(map[string]any)
	if bok && aok {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(bm)) {
			p := path + "." + k
			av, ok := am[k]
			if !ok {
				out = append(out, p+" pruned")
				continue
			}
			out = append(out, lostFields(p, bm[k], av)...)
		}
		return out
	}
	if !reflect.DeepEqual(normalize(before), normalize(after)) {
		return []string{fmt.Sprintf("%s changed from %v to %v", path, before, after)}
	}
	return nil
}

// normalize makes numbers of JSON and of YAML decoders compare equal.
func normalize(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case []any:
		out := make([]any, len(n))
		for i := range n {
			out[i] = normalize(n[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, e := range n {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}
