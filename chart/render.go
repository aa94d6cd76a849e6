package chart

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// DefaultKubeVersion is the Kubernetes version charts are rendered for
// unless RenderOptions says otherwise: the line chartpilot is built on.
const DefaultKubeVersion = "v1.36.0"

// RenderOptions say how to render a chart. The zero value renders with the
// chart's default values as release "release" in namespace "default".
type RenderOptions struct {
	// ReleaseName is .Release.Name (default "release").
	ReleaseName string
	// Namespace is .Release.Namespace (default "default").
	Namespace string
	// Values are user-supplied values, merged over the chart's values.yaml
	// as `helm install -f` does. Nil means the defaults.
	Values map[string]any
	// KubeVersion is .Capabilities.KubeVersion (default DefaultKubeVersion).
	KubeVersion string
	// APIVersions are added to .Capabilities.APIVersions, e.g.
	// "monitoring.coreos.com/v1" or "monitoring.coreos.com/v1/ServiceMonitor".
	APIVersions []string
	// IsUpgrade renders as an upgrade (.Release.IsUpgrade) instead of an install.
	IsUpgrade bool
}

func (o RenderOptions) withDefaults() RenderOptions {
	if o.ReleaseName == "" {
		o.ReleaseName = "release"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.KubeVersion == "" {
		o.KubeVersion = DefaultKubeVersion
	}
	return o
}

// Manifest is one object a render produced.
type Manifest struct {
	// Source is the template that produced it, e.g. "webapp/templates/hpa.yaml"
	// or "umbrella/charts/cache/templates/service.yaml"; for CRDs the file
	// under crds/.
	Source string
	// Hook is the hook annotation's value for hooks, empty otherwise.
	Hook string
	// Object is the parsed object.
	Object *unstructured.Unstructured
}

// GroupVersionKind is the object's apiVersion and kind.
func (m Manifest) GroupVersionKind() schema.GroupVersionKind {
	return m.Object.GroupVersionKind()
}

// Rendered is what a chart renders to with one set of values.
type Rendered struct {
	// Objects are the templates' objects and the hooks, in Helm's install order.
	Objects []Manifest
	// CRDs are the CustomResourceDefinitions under the crds/ directories of
	// the chart and its enabled subcharts, which Helm installs before anything else.
	CRDs []Manifest
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders the chart client-side through Helm's install action in
// dry-run, client-only mode (what `helm template` does), so values.schema.json
// is enforced, subchart conditions and tags apply and hooks are included.
func (c *Chart) Render(opts RenderOptions) (*Rendered, error) {
	opts = opts.withDefaults()
	ch, err := c.reload()
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: kube version %q: %w", c.Name(), opts.KubeVersion, err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = opts.ReleaseName
	install.Namespace = opts.Namespace
	install.KubeVersion = kv
	install.APIVersions = opts.APIVersions
	install.IsUpgrade = opts.IsUpgrade
	// Helm merges into the map it is given: hand it a copy.
	vals := MergeValues(copyValues(c.Values), copyValues(opts.Values))
	rel, err := install.Run(ch, vals)
	if err != nil {
		if ve := valueError(ch, err); ve != nil {
			err = ve
		}
		return nil, fmt.Errorf("rendering chart %s: %w", c.Name(), err)
	}

	out := &Rendered{Notes: rel.Info.Notes}
	_, manifests, err := releaseutil.SortManifests(bySource(rel.Manifest), nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", c.Name(), err)
	}
	for _, m := range manifests {
		objs, err := parseObjects(m.Name, m.Content)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, Manifest{Source: m.Name, Object: o})
		}
	}
	for _, h := range rel.Hooks {
		objs, err := parseObjects(h.Path, h.Manifest)
		if err != nil {
			return nil, err
		}
		events := make([]string, 0, len(h.Events))
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, Manifest{Source: h.Path, Hook: strings.Join(events, ","), Object: o})
		}
	}
	for _, crd := range ch.CRDObjects() {
		objs, err := parseObjects(crd.Filename, string(crd.File.Data))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out.CRDs = append(out.CRDs, Manifest{Source: crd.Filename, Object: o})
		}
	}
	return out, nil
}

// sourcePrefix starts the comment Helm puts above each rendered document.
const sourcePrefix = "# Source: "

// bySource groups the documents of a release manifest by the template that
// rendered them, as SortManifests wants them.
func bySource(manifest string) map[string]string {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	files := map[string]string{}
	for _, k := range keys {
		doc := docs[k]
		source := "unknown"
		if first, _, _ := strings.Cut(strings.TrimLeft(doc, "\n"), "\n"); strings.HasPrefix(first, sourcePrefix) {
			source = strings.TrimPrefix(first, sourcePrefix)
		}
		if prev, ok := files[source]; ok {
			files[source] = prev + "\n---\n" + doc
		} else {
			files[source] = doc
		}
	}
	return files
}

// parseObjects parses the YAML documents of one rendered file.
func parseObjects(source, content string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	// SplitManifests keys its map "manifest-N": order them by N.
	docs := releaseutil.SplitManifests(content)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(docs[k]), &obj); err != nil {
			return nil, fmt.Errorf("parsing the output of %s: %w", source, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("parsing the output of %s: an object without apiVersion or kind", source)
		}
		out = append(out, u)
	}
	return out, nil
}

// MergeValues merges over into base, as Helm merges the values files
// given one after the other (-f a.yaml -f b.yaml): maps merge key by key,
// anything else in over replaces what base holds (a null too, which Helm
// later reads as "delete this default"). base is changed and returned.
func MergeValues(base, over map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = MergeValues(bm, vm)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// copyValues deep-copies a values tree.
func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, val := range v {
		out[k] = copyValue(val)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyValues(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyValue(e)
		}
		return out
	default:
		return v
	}
}
