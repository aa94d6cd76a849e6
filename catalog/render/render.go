package render

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

// Options select what to render and how.
type Options struct {
	// Format is yaml (default) or json.
	Format fbc.Format
	// Packages limits the output to these packages; empty means all.
	Packages []string
}

// Render writes the catalog in fsys as one FBC stream in a deterministic order:
// packages by name, each with its olm.package, channels and bundles by
// name, then its other blobs and deprecations.
func Render(ctx context.Context, w io.Writer, fsys fs.FS, opts Options) error {
	f := cmp.Or(opts.Format, fbc.FormatYAML)
	if err := f.Check(); err != nil {
		return err
	}
	cfg, err := load(ctx, fsys, opts.Packages)
	if err != nil {
		return err
	}
	fbc.Sort(cfg)
	normalizeBundles(cfg)
	return writeConcurrently(ctx, cfg, f, w)
}

// normalizeBundles orders what `opm render` orders, so that both render a
// catalog alike: each bundle's manifests (olm.bundle.object and
// olm.csv.metadata properties) after its other properties, and its related
// images by image.
func normalizeBundles(cfg *declcfg.DeclarativeConfig) {
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		manifest := func(p property.Property) bool {
			return p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata
		}
		props := make([]property.Property, 0, len(b.Properties))
		for _, p := range b.Properties {
			if !manifest(p) {
				props = append(props, p)
			}
		}
		for _, p := range b.Properties {
			if manifest(p) {
				props = append(props, p)
			}
		}
		b.Properties = props
		// sort.Slice, as opm: images listed twice keep opm's order.
		sort.Slice(b.RelatedImages, func(x, y int) bool { return b.RelatedImages[x].Image < b.RelatedImages[y].Image })
	}
}

// writeConcurrently encodes each package on its own goroutine and writes
// them in name order, then the blobs of no package: the bytes the declcfg
// writer produces for the whole catalog, in a fraction of the time. It
// streams: a package is written as soon as it and those before it are
// encoded, and both its blobs and its encoding are dropped then, so that
// the catalog and its whole rendering are never in memory at once (they
// were render's peak). cfg is emptied; encoding runs at most
// renderLookahead packages ahead of the writer.
func writeConcurrently(ctx context.Context, cfg *declcfg.DeclarativeConfig, f fbc.Format, w io.Writer) error {
	names, byPkg, rootOthers := fbc.SplitByPackage(*cfg)
	*cfg = declcfg.DeclarativeConfig{}
	parts := make([]encodedPackage, len(names))
	for i, n := range sets.List(names) {
		parts[i] = encodedPackage{cfg: *byPkg[n], done: make(chan struct{})}
	}
	clear(byPkg)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, renderLookahead())
	go func() {
		for i := range parts {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go parts[i].encode(f)
		}
	}()
	for i := range parts {
		select {
		case <-parts[i].done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if parts[i].err != nil {
			return parts[i].err
		}
		if _, err := parts[i].out.WriteTo(w); err != nil {
			return err
		}
		parts[i].out = bytes.Buffer{}
		<-slots
	}
	if len(rootOthers) == 0 {
		return nil
	}
	return f.Write(declcfg.DeclarativeConfig{Others: rootOthers}, w)
}

// renderLookahead is how many packages may be encoded and not yet written:
// enough to keep every CPU busy while one large package is encoded.
func renderLookahead() int { return 2 * runtime.GOMAXPROCS(0) }

// encodedPackage is one package of a streamed render.
type encodedPackage struct {
	cfg  declcfg.DeclarativeConfig
	out  bytes.Buffer
	err  error
	done chan struct{}
}

// encode writes the package into out and drops its blobs.
func (p *encodedPackage) encode(f fbc.Format) {
	defer close(p.done)
	p.err = f.Write(p.cfg, &p.out)
	p.cfg = declcfg.DeclarativeConfig{}
}

// GraphOptions select the upgrade graphs to draw.
type GraphOptions struct {
	// Packages limits the output to these packages; empty means all.
	Packages []string
	// Format is GraphMermaid (the default) or GraphSVG.
	Format string
}

// The formats Graph writes.
const (
	// GraphMermaid is a mermaid flowchart (text that renders on GitHub).
	GraphMermaid = "mermaid"
	// GraphSVG is an SVG picture.
	GraphSVG = "svg"
)

// Graph writes the upgrade graph of every channel of the catalog in fsys
// as a mermaid flowchart or an SVG picture.
func Graph(ctx context.Context, w io.Writer, fsys fs.FS, opts GraphOptions) error {
	if opts.Format != "" && opts.Format != GraphMermaid && opts.Format != GraphSVG {
		return fmt.Errorf("unknown graph format %q (want %s or %s)", opts.Format, GraphMermaid, GraphSVG)
	}
	cfg, err := load(ctx, fsys, opts.Packages)
	if err != nil {
		return err
	}
	if opts.Format == GraphSVG {
		return WriteSVG(w, cfg)
	}
	return WriteMermaid(w, cfg)
}

// load reads the catalog in fsys, limited to pkgs unless empty. The
// bundles' decoded manifests are not written: not kept either.
func load(ctx context.Context, fsys fs.FS, pkgs []string) (*declcfg.DeclarativeConfig, error) {
	cfg, err := fbc.LoadForWrite(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	if len(pkgs) > 0 {
		cfg = fbc.FilterPackages(cfg, pkgs)
	}
	return cfg, nil
}

var mermaidUnsafe = regexp.MustCompile(`[^A-Za-z0-9_]`)

// WriteMermaid draws each package as a subgraph holding one subgraph per
// channel; nodes are bundles (name and version), edges point from the
// installed bundle to its upgrade: "replaces" and "skips" edges as written,
// and skipRange edges into each channel's head (the ranges of other entries
// are noted on their nodes, drawing all of them would bury the chain).
// Deprecated bundles, channels and packages are marked.
func WriteMermaid(w io.Writer, cfg *declcfg.DeclarativeConfig) error {
	gi, err := newGraphInput(cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	b.WriteString("  classDef deprecated fill:#f5d0a9,stroke:#b45f06\n")
	b.WriteString("  classDef head stroke-width:3px\n")
	for _, p := range gi.pkgs {
		pkgID := "pkg_" + mermaidUnsafe.ReplaceAllString(p, "_")
		label := p
		if gi.isDeprecated(p, declcfg.SchemaPackage, "") {
			label += " (deprecated)"
		}
		fmt.Fprintf(&b, "  subgraph %s[%q]\n", pkgID, label)
		for _, ch := range gi.sortedChannels(p) {
			chID := pkgID + "__" + mermaidUnsafe.ReplaceAllString(ch.Name, "_")
			chLabel := ch.Name
			if gi.isDeprecated(p, declcfg.SchemaChannel, ch.Name) {
				chLabel += " (deprecated)"
			}
			fmt.Fprintf(&b, "    subgraph %s[%q]\n", chID, chLabel)
			writeChannelMermaid(&b, chID, ch, gi.versions[p], func(bundle string) bool {
				return gi.isDeprecated(p, declcfg.SchemaBundle, bundle)
			})
			b.WriteString("    end\n")
		}
		b.WriteString("  end\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// graphInput is what the drawings of a catalog's upgrade graphs need.
type graphInput struct {
	// versions are the bundles' versions by package and bundle name.
	versions map[string]map[string]semver.Version
	// deprecated holds the deprecation messages by package/schema/name.
	deprecated map[string]string
	byPkg      map[string]*declcfg.DeclarativeConfig
	// pkgs are the package names, sorted.
	pkgs []string
}

func newGraphInput(cfg *declcfg.DeclarativeConfig) (*graphInput, error) {
	gi := &graphInput{versions: map[string]map[string]semver.Version{}, deprecated: map[string]string{}}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		v, err := fbc.BundleVersion(b)
		if err != nil {
			return nil, err
		}
		if gi.versions[b.Package] == nil {
			gi.versions[b.Package] = map[string]semver.Version{}
		}
		gi.versions[b.Package][b.Name] = v
	}
	for _, d := range cfg.Deprecations {
		for _, e := range d.Entries {
			gi.deprecated[d.Package+"/"+e.Reference.Schema+"/"+e.Reference.Name] = e.Message
		}
	}
	drawn := *cfg
	drawn.Others = nil // a package is drawn for its own blobs only
	names, byPkg, _ := fbc.SplitByPackage(drawn)
	gi.byPkg, gi.pkgs = byPkg, sets.List(names)
	return gi, nil
}

// isDeprecated tells whether the package, a channel or a bundle of it
// (by schema and name; the package's name is empty) is deprecated.
func (gi *graphInput) isDeprecated(pkg, schema, name string) bool {
	_, ok := gi.deprecated[pkg+"/"+schema+"/"+name]
	return ok
}

// sortedChannels are a package's channels by name.
func (gi *graphInput) sortedChannels(pkg string) []declcfg.Channel {
	channels := slices.Clone(gi.byPkg[pkg].Channels)
	slices.SortFunc(channels, func(x, y declcfg.Channel) int { return strings.Compare(x.Name, y.Name) })
	return channels
}

// graphEdge is an upgrade edge of a channel: from the installed bundle to
// its upgrade.
type graphEdge struct {
	from, to string
	// kind is "replaces", "skips" or "skipRange".
	kind string
	// skipRange is the range of a skipRange edge.
	skipRange string
	// parallel says a replaces or skips edge joins the same bundles: the
	// drawing keeps the two apart.
	parallel bool
}

// channelGraph is what the drawings show of a channel: its entries in
// version order, its head, and its edges in a stable order (per entry:
// replaces, skips, then the head's skipRange edges). skipRange edges are
// drawn into the head only, from every bundle in its range, also those a
// replaces or skips already joins to it (the range is what lets them
// upgrade straight to the head); drawing every entry's range would bury
// the chain, so the others are noted on their nodes.
type channelGraph struct {
	entries []declcfg.ChannelEntry
	head    string
	edges   []graphEdge
}

func newChannelGraph(ch declcfg.Channel, versions map[string]semver.Version) channelGraph {
	entries := slices.Clone(ch.Entries)
	slices.SortFunc(entries, func(x, y declcfg.ChannelEntry) int {
		return cmp.Or(versions[x.Name].Compare(versions[y.Name]), strings.Compare(x.Name, y.Name))
	})
	heads := validate.Heads(ch, versions)
	cg := channelGraph{entries: entries}
	for _, e := range entries {
		if slices.Contains(heads, e.Name) {
			cg.head = e.Name // with several heads, the newest
		}
	}
	for _, e := range entries {
		if e.Replaces != "" {
			cg.edges = append(cg.edges, graphEdge{from: e.Replaces, to: e.Name, kind: "replaces"})
		}
		skips := slices.Clone(e.Skips)
		slices.Sort(skips)
		for _, s := range skips {
			cg.edges = append(cg.edges, graphEdge{from: s, to: e.Name, kind: "skips"})
		}
		if e.Name != cg.head || e.SkipRange == "" {
			continue
		}
		r, err := semver.ParseRange(e.SkipRange)
		if err != nil {
			continue
		}
		for _, o := range entries {
			if v, ok := versions[o.Name]; ok && o.Name != e.Name && r(v) {
				parallel := o.Name == e.Replaces || slices.Contains(e.Skips, o.Name)
				cg.edges = append(cg.edges, graphEdge{from: o.Name, to: e.Name, kind: "skipRange", skipRange: e.SkipRange, parallel: parallel})
			}
		}
	}
	return cg
}

func writeChannelMermaid(b *strings.Builder, chID string, ch declcfg.Channel, versions map[string]semver.Version, deprecated func(string) bool) {
	id := func(name string) string { return chID + "__" + mermaidUnsafe.ReplaceAllString(name, "_") }
	cg := newChannelGraph(ch, versions)
	known := map[string]bool{}
	for _, e := range cg.entries {
		known[e.Name] = true
		label := mermaidEscape(e.Name)
		if v, ok := versions[e.Name]; ok {
			label += "<br/>" + mermaidEscape(v.String())
		}
		if e.SkipRange != "" && e.Name != cg.head {
			label += "<br/>skipRange " + mermaidEscape(e.SkipRange)
		}
		fmt.Fprintf(b, "      %s[%q]\n", id(e.Name), label)
		if deprecated(e.Name) {
			fmt.Fprintf(b, "      class %s deprecated\n", id(e.Name))
		}
	}
	if cg.head != "" {
		fmt.Fprintf(b, "      class %s head\n", id(cg.head))
	}
	node := func(name string) string {
		if known[name] {
			return id(name)
		}
		// An edge out of the channel (e.g. the tail replacing a removed bundle).
		known[name] = true
		return fmt.Sprintf("%s[%q]", id(name), mermaidEscape(name)+" (not in channel)")
	}
	for _, e := range cg.edges {
		switch e.kind {
		case "replaces":
			fmt.Fprintf(b, "      %s -- replaces --> %s\n", node(e.from), id(e.to))
		case "skips":
			fmt.Fprintf(b, "      %s -. skips .-> %s\n", node(e.from), id(e.to))
		default:
			fmt.Fprintf(b, "      %s -. %q .-> %s\n", id(e.from), "skipRange "+mermaidEscape(e.skipRange), id(e.to))
		}
	}
}

// mermaidEscape writes < and > as mermaid entity codes, so that ranges
// are not read as HTML.
func mermaidEscape(s string) string {
	return strings.NewReplacer("<", "#lt;", ">", "#gt;", `"`, "#quot;").Replace(s)
}
