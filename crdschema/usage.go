package crdschema

import (
	"fmt"
	"sort"
	"strings"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// Use is what templates do with a values path, as a set of flags.
type Use uint16

const (
	// UseRead: the value is read (printed, compared, tested, defaulted).
	UseRead Use = 1 << iota
	// UseObject: fields below it are read, so it is a map.
	UseObject
	// UseFree: it is handed whole to toYaml, tpl, include or a function this
	// package does not follow: any value may be meant.
	UseFree
	// UseRange: it is ranged over: a list or a map whose keys are data.
	UseRange
	// UseAnyKey: keys below it that values.yaml does not declare may be
	// read: the chart renders values with tpl, whose templates (written in
	// the values) may read any value.
	UseAnyKey
	// UseIntOrString: it lands in a field the Kubernetes API reads as an
	// integer or a string (targetPort, minAvailable, maxUnavailable,
	// maxSurge, a probe's port).
	UseIntOrString
	// UsePort: it lands in a port field, which is int-or-string in some
	// kinds (probes, network policies) and an integer in others.
	UsePort
	// UseQuantity: it lands in a resource quantity (cpu, memory, requests
	// and limits), which the API reads from a string or a number.
	UseQuantity
	// UseNumber: a template computes with it or compares it as a number.
	UseNumber
	// UseNumberDefault: a template defaults it to a number, which it may
	// then be besides its default's type.
	UseNumberDefault
	// UseStringDefault: a template defaults it to a (non-empty) string.
	UseStringDefault
	// UseTyped: a template hands it to a function or comparison that takes
	// one type (upper, trim, b64enc, eq...), which fails on another.
	UseTyped
	// UseBare: an action prints it, unformatted, as the whole value of a
	// YAML field, whose type it then is in the object.
	UseBare
)

// Elem is the path segment of an element of a ranged (or indexed) list or
// map, e.g. env.[].name for `range .Values.env` then `.name`.
const Elem = "[]"

// AnyKeys is the last path segment of a use (UseAnyKey) of the map above
// it that a template makes by rendering values with tpl: the map's
// fields, not the map's value. It keeps the files of that use apart.
const AnyKeys = "\x00tpl"

// PathUse is how a chart's files use one values path.
type PathUse struct {
	// Path is the path's segments, e.g. [image tag].
	Path []string
	// Use is every use seen.
	Use Use
	// Files are the chart files that use it (sorted, unique).
	Files []string
}

// Dotted is the path as `.Values` would spell it, e.g. image.tag, with
// elements as env[].name.
func (p *PathUse) Dotted() string { return dotted(p.Path) }

func dotted(path []string) string {
	var b strings.Builder
	for i, seg := range path {
		if seg == AnyKeys {
			b.WriteString("(tpl)")
			continue
		}
		if i > 0 && seg != Elem {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// Usage is what a chart's files do with each values path they reference.
type Usage map[string]*PathUse

// add records a use of path by file.
func (u Usage) add(path []string, use Use, file string) {
	key := strings.Join(path, "\x1f")
	p, ok := u[key]
	if !ok {
		p = &PathUse{Path: append([]string(nil), path...)}
		u[key] = p
	}
	p.Use |= use
	i := sort.SearchStrings(p.Files, file)
	if i == len(p.Files) || p.Files[i] != file {
		p.Files = append(p.Files[:i], append([]string{file}, p.Files[i:]...)...)
	}
}

// Sorted lists the paths in order, parents before their children.
func (u Usage) Sorted() []*PathUse {
	keys := make([]string, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*PathUse, 0, len(keys))
	for _, k := range keys {
		out = append(out, u[k])
	}
	return out
}

// TemplateUsage parses every template of ch (not its subcharts) with Helm's
// function names and collects the values paths they reference and how.
// Named templates (define) are read as if included with the top-level
// context, which is how charts almost always call them; a values path
// handed to include or template is free-form.
func TemplateUsage(ch *helmchart.Chart) (Usage, error) {
	u := Usage{}
	funcs := helmFuncs()
	for _, f := range ch.Templates {
		trees := map[string]*parse.Tree{}
		t := parse.New(f.Name)
		if _, err := t.Parse(string(f.Data), "", "", trees, funcs); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f.Name, err)
		}
		names := make([]string, 0, len(trees))
		for n := range trees {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			w := &walker{file: f.Name, usage: u}
			w.list(trees[n].Root, newScope())
		}
	}
	return u, nil
}

// helmFuncs are the names of the functions Helm's templates may call: Go's
// builtins, sprig's (env and expandenv aside, which parse all the same) and
// Helm's own. Only the names matter for parsing.
func helmFuncs() map[string]any {
	f := map[string]any{}
	for k, v := range sprig.TxtFuncMap() {
		f[k] = v
	}
	placeholder := func(...any) any { return nil }
	for _, k := range []string{"and", "or", "not", "index", "slice", "len", "print", "printf", "println", "call",
		"eq", "ne", "lt", "le", "gt", "ge", "html", "js", "urlquery", "toToml", "fromToml", "toYaml", "toYamlPretty", "fromYaml", "fromYamlArray",
		"toJson", "fromJson", "fromJsonArray", "include", "tpl", "required", "lookup"} {
		f[k] = placeholder
	}
	return f
}

// addUnder adds a subchart's usage: its paths below key (none: the
// parent's own; its global values are its parent's), its files below dir.
func (u Usage) addUnder(sub Usage, key, dir string) {
	for _, p := range sub.Sorted() {
		path := p.Path
		if key != "" && (len(path) == 0 || path[0] != "global") {
			path = append([]string{key}, path...)
		}
		for _, f := range p.Files {
			u.add(path, p.Use, dir+f)
		}
	}
}
