package rbac

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/chart"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// templateScan is what reading one template (not rendering it) tells.
type templateScan struct {
	// Source is the template's path as Helm names its output, e.g.
	// "umbrella/charts/cache/templates/pdb.yaml".
	Source string
	// Kinds are the literal apiVersion/kind pairs of its documents.
	Kinds []schema.GroupVersionKind
	// KindValues are the values that choose a document's kind or apiVersion
	// (`kind: {{ .Values.kind }}`): the render of the defaults shows one
	// choice only.
	KindValues []kindValue
}

// kindValue is a value a template's kind or apiVersion comes from.
type kindValue struct {
	// Path is the value's dotted path from the top chart's values.
	Path string
	// Field is "kind" or "apiVersion".
	Field string
}

var (
	valueRef   = regexp.MustCompile(`\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)`)
	docSep     = regexp.MustCompile(`(?m)^---\s*$`)
	apiVersion = regexp.MustCompile(`(?m)^apiVersion:\s*["']?([A-Za-z0-9./-]+)["']?\s*$`)
	kindLine   = regexp.MustCompile(`(?m)^kind:\s*["']?([A-Za-z0-9]+)["']?\s*$`)
	// kindOrAPIFromAction is a kind or apiVersion line with a template action.
	kindOrAPIFromAction = regexp.MustCompile(`(?m)^(kind|apiVersion):\s*(.*\{\{.*)$`)
)

// scanTemplates reads every template of ch and its subcharts.
func scanTemplates(ch *helmchart.Chart) []templateScan {
	var out []templateScan
	scanChart(ch, ch.Name(), nil, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

// scanChart scans ch, whose output paths start with dir and whose values sit
// at prefix in the top chart's values.
func scanChart(ch *helmchart.Chart, dir string, prefix []string, out *[]templateScan) {
	for _, t := range ch.Templates {
		base := path.Base(t.Name)
		if strings.HasPrefix(base, "_") || !strings.HasPrefix(t.Name, "templates/") || strings.HasSuffix(base, ".txt") {
			continue
		}
		s := templateScan{Source: dir + "/" + t.Name}
		// One pass over the lines: only those that start with apiVersion:,
		// kind: or --- matter (a chart's CRDs make megabytes of others).
		var doc []string
		flush := func() {
			for _, gvk := range docKinds(doc) {
				if !slices.Contains(s.Kinds, gvk) {
					s.Kinds = append(s.Kinds, gvk)
				}
			}
			doc = nil
		}
		for _, line := range strings.Split(string(t.Data), "\n") {
			switch {
			case strings.HasPrefix(line, "---"):
				if docSep.MatchString(line) {
					flush()
				}
			case strings.HasPrefix(line, "apiVersion:"), strings.HasPrefix(line, "kind:"):
				doc = append(doc, line)
				if m := kindOrAPIFromAction.FindStringSubmatch(line); m != nil {
					for _, ref := range valueRef.FindAllStringSubmatch(m[2], -1) {
						p := append(append([]string(nil), prefix...), strings.Split(strings.TrimPrefix(ref[1], "."), ".")...)
						kv := kindValue{Path: strings.Join(p, "."), Field: m[1]}
						if !slices.Contains(s.KindValues, kv) {
							s.KindValues = append(s.KindValues, kv)
						}
					}
				}
			}
		}
		flush()
		*out = append(*out, s)
	}
	for _, subchart := range chart.Subcharts(ch) {
		scanChart(subchart.Chart, dir+"/charts/"+subchart.Key, append(append([]string(nil), prefix...), subchart.Key), out)
	}
}

// docKinds pairs the apiVersion and kind lines of a document: each kind
// with the apiVersions written since the one before (a switch, on
// .Capabilities say, writes one of several), apiVersions after the last
// kind with it. A List is never created (Helm creates its items): left out.
func docKinds(lines []string) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	var pending []string
	last := ""
	pair := func(kind string) {
		for _, av := range pending {
			if gv, err := schema.ParseGroupVersion(av); err == nil && !strings.HasSuffix(kind, "List") {
				out = append(out, gv.WithKind(kind))
			}
		}
		pending = nil
	}
	for _, line := range lines {
		if m := apiVersion.FindStringSubmatch(line); m != nil {
			pending = append(pending, m[1])
		} else if m := kindLine.FindStringSubmatch(line); m != nil {
			last = m[1]
			pair(last)
		}
	}
	if last != "" {
		pair(last)
	}
	return out
}

// lookupValue returns the value at a dotted path and whether it exists.
func lookupValue(vals map[string]any, p string) (any, bool) {
	var cur any = vals
	for _, k := range strings.Split(p, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setValue sets the value at a dotted path, creating maps on the way; it
// fails (returns false) where a non-map value is in the way.
func setValue(vals map[string]any, p string, v any) bool {
	keys := strings.Split(p, ".")
	cur := vals
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k]
		if !ok || next == nil {
			m := map[string]any{}
			cur[k] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return false
		}
		cur = m
	}
	cur[keys[len(keys)-1]] = v
	return true
}
