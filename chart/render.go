package chart

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
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
	// ServedAPIVersions, when not nil, are .Capabilities.APIVersions: the
	// group/versions and group/version/kinds the target cluster serves, e.g.
	// "policy/v1" and "policy/v1/PodDisruptionBudget". Nil means Helm's
	// built-in list (what `helm template` uses: every version client-go
	// knows, served or not).
	ServedAPIVersions []string
	// APIVersions are added to .Capabilities.APIVersions, e.g.
	// "monitoring.coreos.com/v1" or "monitoring.coreos.com/v1/ServiceMonitor".
	APIVersions []string
	// IsUpgrade renders as an upgrade (.Release.IsUpgrade) instead of an install.
	IsUpgrade bool
	// ReuseKeys makes the templates' keys and certificates (genPrivateKey,
	// genCA, genSelfSignedCert, genSignedCert) from one key of each type
	// the Renderer made once: for renders whose objects are read, never
	// applied, where a new RSA key per certificate is most of the time.
	ReuseKeys bool
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

// Render renders the chart client-side, the way `helm template` does (see
// Renderer.Render). Renders of one chart that share work should share a
// Renderer.
func (c *Chart) Render(opts RenderOptions) (*Rendered, error) {
	r, err := c.Renderer()
	if err != nil {
		return nil, err
	}
	return r.Render(opts)
}

// Renderer renders one chart many times. It loads the chart once, and parses
// the output of a template once per distinct text: a chart rendered with many
// sets of values mostly renders the same documents (a chart's CRDs are often
// megabytes), and parsing them is most of the cost of a render.
//
// The objects of its renders are shared between renders that produced the
// same text: read them, do not modify them. A Renderer is not safe for
// concurrent use.
type Renderer struct {
	chart *Chart
	// loaded is the chart as loaded, never given to Helm: each render works
	// on a copy of its tree, since Helm prunes disabled subcharts from the
	// chart it renders.
	loaded *helmchart.Chart
	// parsed holds the documents of each template output seen, by file and text.
	parsed map[renderedFile]*parsedFile
	// keys are the keys of renders with ReuseKeys.
	keys keyPool
}

type renderedFile struct{ name, text string }

// parsedFile is one template's output, split and parsed as Helm does.
type parsedFile struct {
	objects, hooks []Manifest
	// err is the parse error, kept so that the same text fails the same way.
	err error
}

// Renderer returns a renderer of the chart, loaded afresh from its Path (or
// copied from Helm when it has none).
func (c *Chart) Renderer() (*Renderer, error) {
	loaded := c.Helm
	if c.Path != "" {
		ch, err := c.reload()
		if err != nil {
			return nil, err
		}
		loaded = ch
	}
	return &Renderer{chart: c, loaded: loaded, parsed: map[renderedFile]*parsedFile{}}, nil
}

// Render renders the chart client-side with Helm's engine the way Helm's
// install action does in client-only dry-run mode (what `helm template`
// does): subchart conditions and tags apply, values.schema.json is enforced,
// the chart's kubeVersion constraint is checked, hooks are included and
// objects are in Helm's install order. Unlike `helm template`,
// .Capabilities.APIVersions can be the API set of a given cluster
// (RenderOptions.ServedAPIVersions) instead of Helm's built-in list.
func (r *Renderer) Render(opts RenderOptions) (*Rendered, error) {
	opts = opts.withDefaults()
	name := r.chart.Name()
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, fmt.Errorf("rendering chart %s: release name %q: %w", name, opts.ReleaseName, err)
	}
	caps, err := opts.capabilities()
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", name, err)
	}
	ch := copyTree(r.loaded)
	// Helm merges into the map it is given: hand it a copy.
	vals := MergeValues(copyValues(r.chart.Values), copyValues(opts.Values))
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", name, err)
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("rendering chart %s: chart requires kubeVersion: %s which is incompatible with Kubernetes %s", name, kv, caps.KubeVersion.String())
	}
	release := helmcommon.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: !opts.IsUpgrade, IsUpgrade: opts.IsUpgrade}
	top, err := valuesutil.ToRenderValuesWithSchemaValidation(ch, vals, release, caps, false)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", name, err)
	}
	var e engine.Engine
	if opts.ReuseKeys {
		e.CustomTemplateFuncs = r.keys.funcs()
	}
	files, err := e.Render(ch, top)
	if err != nil {
		if ve := valueError(ch, err); ve != nil {
			err = ve
		}
		return nil, fmt.Errorf("rendering chart %s: %w", name, err)
	}
	out := &Rendered{}
	var objects, hooks []Manifest
	for _, file := range slices.Sorted(maps.Keys(files)) {
		text := files[file]
		if strings.HasSuffix(file, notesFile) {
			// Only the top chart's notes, as Helm shows them.
			if file == path.Join(ch.Name(), "templates", notesFile) {
				out.Notes = text
			}
			continue
		}
		if strings.HasPrefix(path.Base(file), "_") || strings.TrimSpace(text) == "" {
			continue
		}
		p := r.parse(file, text)
		if p.err != nil {
			return nil, fmt.Errorf("rendering chart %s: %w", name, p.err)
		}
		objects = append(objects, p.objects...)
		hooks = append(hooks, p.hooks...)
	}
	sortByKind(objects)
	sortByKind(hooks)
	out.Objects = append(objects, hooks...)
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

// notesFile is the name of a chart's notes template.
const notesFile = "NOTES.txt"

// capabilities are .Capabilities for the render.
func (o RenderOptions) capabilities() (*helmcommon.Capabilities, error) {
	kv, err := helmcommon.ParseKubeVersion(o.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", o.KubeVersion, err)
	}
	caps := helmcommon.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	if o.ServedAPIVersions != nil {
		caps.APIVersions = append(helmcommon.VersionSet(nil), o.ServedAPIVersions...)
	}
	caps.APIVersions = append(caps.APIVersions, o.APIVersions...)
	return caps, nil
}

// parse splits and parses one template's output, once per distinct text.
func (r *Renderer) parse(file, text string) *parsedFile {
	key := renderedFile{name: file, text: text}
	if p, ok := r.parsed[key]; ok {
		return p
	}
	p := parseFile(file, text)
	r.parsed[key] = p
	return p
}

// parseFile splits one template's output into documents, and tells hooks
// from the rest, with Helm's own sorter (so that the same documents are
// hooks, and unknown hooks are skipped, as in an install).
func parseFile(file, text string) *parsedFile {
	if singleDocument(text) && !strings.Contains(text, release.HookAnnotation) {
		// One document and no hook (most files, a CRD of megabytes among
		// them): what Helm's sorter would say, without its splitter's
		// regular expression over the whole text.
		objs, err := parseObjects(file, text)
		if err != nil {
			return &parsedFile{err: err}
		}
		p := &parsedFile{}
		for _, o := range objs {
			p.objects = append(p.objects, Manifest{Source: file, Object: o})
		}
		return p
	}
	hs, ms, err := releaseutil.SortManifests(map[string]string{file: text}, nil, releaseutil.InstallOrder)
	if err != nil {
		return &parsedFile{err: err}
	}
	p := &parsedFile{}
	for _, m := range ms {
		objs, err := parseObjects(m.Name, m.Content)
		if err != nil {
			return &parsedFile{err: err}
		}
		for _, o := range objs {
			p.objects = append(p.objects, Manifest{Source: m.Name, Object: o})
		}
	}
	for _, h := range hs {
		objs, err := parseObjects(h.Path, h.Manifest)
		if err != nil {
			return &parsedFile{err: err}
		}
		events := make([]string, 0, len(h.Events))
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		for _, o := range objs {
			p.hooks = append(p.hooks, Manifest{Source: h.Path, Hook: strings.Join(events, ","), Object: o})
		}
	}
	return p
}

// sortByKind orders manifests as Helm installs them: by the kind's place in
// Helm's install order, kinds it does not list last and by name, keeping
// the order of the files (and of documents in a file) otherwise.
func sortByKind(ms []Manifest) {
	rank := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		rank[k] = i
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i].Object.GetKind(), ms[j].Object.GetKind()
		ra, aok := rank[a]
		rb, bok := rank[b]
		switch {
		case aok && bok:
			return ra < rb
		case aok != bok:
			return aok
		default:
			return a < b
		}
	})
}

// copyTree copies the chart's tree as far as Helm's dependency processing
// changes it (which subcharts are attached, their metadata's dependencies
// and values), sharing the files, which it only reads.
func copyTree(ch *helmchart.Chart) *helmchart.Chart {
	cp := *ch
	if ch.Metadata != nil {
		md := *ch.Metadata
		md.Dependencies = make([]*helmchart.Dependency, 0, len(ch.Metadata.Dependencies))
		for _, d := range ch.Metadata.Dependencies {
			dc := *d
			md.Dependencies = append(md.Dependencies, &dc)
		}
		cp.Metadata = &md
	}
	cp.Values = copyValues(ch.Values)
	deps := make([]*helmchart.Chart, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		deps = append(deps, copyTree(d))
	}
	cp.SetDependencies(deps...)
	return &cp
}

// parseObjects parses the YAML documents of one rendered file.
func parseObjects(source, content string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	docs := map[string]string{"manifest-0": strings.TrimSpace(content)}
	if !singleDocument(content) {
		// SplitManifests keys its map "manifest-N": order them by N.
		docs = releaseutil.SplitManifests(content)
	}
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

// singleDocument says whether Helm's splitter (a "---" at the start of a
// line, or of the text, separates documents) would find one document only.
func singleDocument(text string) bool {
	t := strings.TrimSpace(text)
	return !strings.HasPrefix(t, "---") && !strings.Contains(t, "\n---")
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
