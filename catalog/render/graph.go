package render

import (
	"cmp"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

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
