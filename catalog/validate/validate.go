package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"golang.org/x/sync/errgroup"

	"github.com/chartpilot/chartpilot/catalog/fbc"
)

// The graph checks' errors, each wrapped with the bundle or channel it is
// about; errors.Is finds them in a Error.
var (
	// ErrModel wraps operator-registry's own validation of a package.
	ErrModel = errors.New("operator-registry validation failed")
	// ErrNoBundles means a package or channel holds no bundle.
	ErrNoBundles = errors.New("no bundles")
	// ErrHeads means a channel has no head or more than one: exactly one
	// bundle may be neither replaced nor skipped by another.
	ErrHeads = errors.New("a channel needs exactly one head")
	// ErrStranded means no upgrade path leads from a bundle to the channel's
	// head: its users are stuck on it, or in a loop.
	ErrStranded = errors.New("stranded bundle")
	// ErrStrandingSkip means every upgrade from a bundle leads to bundles
	// that are skipped, which OLM never offers: the skip strands its users.
	ErrStrandingSkip = errors.New("skips strand users")
	// ErrDowngrade means an edge replaces or skips a newer version.
	ErrDowngrade = errors.New("upgrade edge to an older version")
)

// Error gathers every problem found, as a tree: the catalog, its
// packages, their channels; the leaves name the bundle they are about.
type Error struct {
	// Subject is what the errors are about: `package "foo"`, `channel "stable"`.
	Subject string
	// Errs are the problems, leaves or nested *Error.
	Errs []error
}

// Error renders the tree.
func (e *Error) Error() string {
	var b strings.Builder
	e.write(&b, "", "")
	return strings.TrimSuffix(b.String(), "\n")
}

// Unwrap exposes the children to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Errs }

func (e *Error) write(b *strings.Builder, first, rest string) {
	b.WriteString(first + e.Subject)
	if len(e.Errs) > 0 {
		b.WriteString(":")
	}
	b.WriteString("\n")
	for i, err := range e.Errs {
		branch, cont := "├── ", "│   "
		if i == len(e.Errs)-1 {
			branch, cont = "└── ", "    "
		}
		var sub *Error
		if errors.As(err, &sub) && sub == err {
			sub.write(b, rest+branch, rest+cont)
			continue
		}
		lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
		b.WriteString(rest + branch + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString(rest + cont + l + "\n")
		}
	}
}

func (e *Error) add(err error) {
	if err != nil {
		e.Errs = append(e.Errs, err)
	}
}

func (e *Error) orNil() error {
	if len(e.Errs) == 0 {
		return nil
	}
	return e
}

// FS checks every package of the catalog in fsys, named name, with
// operator-registry's model validation and chartpilot's graph checks (one
// head per channel, every bundle has an upgrade path to the head so none is
// stranded, no skip strands users, no edge to an older version). It returns a
// *Error holding all problems, or nil.
func FS(ctx context.Context, name string, fsys fs.FS) error {
	cfg, err := fbc.Load(ctx, fsys)
	if err != nil {
		return fmt.Errorf("reading catalog %s: %w", name, err)
	}
	return Config(name, cfg)
}

// Config validates a loaded catalog; name is its subject.
func Config(name string, cfg *declcfg.DeclarativeConfig) error {
	root := &Error{Subject: fmt.Sprintf("catalog %q", name)}
	byPkg := splitByPackage(cfg)
	for _, o := range cfg.Others {
		if o.Package == "" {
			continue
		}
		if _, ok := byPkg[o.Package]; !ok {
			root.add(fmt.Errorf("%s blob %q refers to unknown package %q", o.Schema, o.Name, o.Package))
		}
	}
	names := make([]string, 0, len(byPkg))
	for n := range byPkg {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		root.add(fmt.Errorf("%w: the catalog holds no package", ErrNoBundles))
	}
	// Packages are independent: check them in parallel, report in order.
	errs := make([]error, len(names))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, n := range names {
		g.Go(func() error {
			errs[i] = validatePackage(n, byPkg[n])
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		root.add(err)
	}
	return root.orNil()
}

// PackageFile validates the package pkg held alone in the file path.
func PackageFile(path, pkg string, cfg declcfg.DeclarativeConfig) error {
	root := &Error{Subject: fmt.Sprintf("catalog package file %q", path)}
	root.add(validatePackage(pkg, cfg))
	return root.orNil()
}

// splitByPackage groups a catalog's blobs by package.
func splitByPackage(cfg *declcfg.DeclarativeConfig) map[string]declcfg.DeclarativeConfig {
	out := map[string]declcfg.DeclarativeConfig{}
	get := func(n string) declcfg.DeclarativeConfig { return out[n] }
	for _, p := range cfg.Packages {
		c := get(p.Name)
		c.Packages = append(c.Packages, p)
		out[p.Name] = c
	}
	for _, ch := range cfg.Channels {
		c := get(ch.Package)
		c.Channels = append(c.Channels, ch)
		out[ch.Package] = c
	}
	for _, b := range cfg.Bundles {
		c := get(b.Package)
		c.Bundles = append(c.Bundles, b)
		out[b.Package] = c
	}
	for _, d := range cfg.Deprecations {
		c := get(d.Package)
		c.Deprecations = append(c.Deprecations, d)
		out[d.Package] = c
	}
	return out
}

// validatePackage runs operator-registry's conversion and validation, then
// the graph checks of each channel.
func validatePackage(name string, cfg declcfg.DeclarativeConfig) error {
	node := &Error{Subject: fmt.Sprintf("package %q", name)}
	if len(cfg.Packages) == 0 {
		node.add(fmt.Errorf("no olm.package blob, but channels or bundles refer to it"))
		return node
	}
	if len(cfg.Bundles) == 0 {
		node.add(fmt.Errorf("%w: add one with `chartpilot catalog add`", ErrNoBundles))
		return node
	}
	if _, err := declcfg.ConvertToModel(withoutObjectData(cfg)); err != nil {
		node.add(fmt.Errorf("%w:\n%s", ErrModel, strings.TrimPrefix(err.Error(), "invalid index:\n")))
	}

	versions := map[string]semver.Version{}
	for i := range cfg.Bundles {
		v, err := fbc.BundleVersion(&cfg.Bundles[i])
		if err != nil {
			node.add(err)
			continue
		}
		versions[cfg.Bundles[i].Name] = v
	}
	channels := slices.Clone(cfg.Channels)
	slices.SortFunc(channels, func(a, b declcfg.Channel) int { return strings.Compare(a.Name, b.Name) })
	for _, ch := range channels {
		node.add(checkChannelGraph(ch, versions))
	}
	return node.orNil()
}

// upgradeGraph is a channel's upgrade edges, from the installed bundle to
// the bundles OLM may upgrade it to.
type upgradeGraph struct {
	names    []string
	versions map[string]semver.Version
	// to maps a bundle to the bundles that replace, skip or skipRange it.
	to map[string][]string
	// skippedBy maps a bundle to the bundles listing it in skips.
	skippedBy map[string][]string
	// incoming counts the replaces and skips edges into each bundle, the
	// way OLM finds a channel's head.
	incoming map[string]int
}

func newUpgradeGraph(ch declcfg.Channel, versions map[string]semver.Version) *upgradeGraph {
	g := &upgradeGraph{versions: versions, to: map[string][]string{}, skippedBy: map[string][]string{}, incoming: map[string]int{}}
	in := map[string]bool{}
	for _, e := range ch.Entries {
		g.names = append(g.names, e.Name)
		in[e.Name] = true
	}
	edge := func(from, to string) {
		if from != to && in[from] && !slices.Contains(g.to[from], to) {
			g.to[from] = append(g.to[from], to)
		}
	}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			edge(e.Replaces, e.Name)
			if in[e.Replaces] {
				g.incoming[e.Replaces]++
			}
		}
		for _, s := range e.Skips {
			edge(s, e.Name)
			if in[s] {
				g.incoming[s]++
				g.skippedBy[s] = append(g.skippedBy[s], e.Name)
			}
		}
		if e.SkipRange == "" {
			continue
		}
		r, err := semver.ParseRange(e.SkipRange)
		if err != nil {
			continue // reported by operator-registry's validation
		}
		for _, other := range ch.Entries {
			if v, ok := versions[other.Name]; ok && r(v) {
				edge(other.Name, e.Name)
			}
		}
	}
	for _, n := range g.names {
		slices.Sort(g.to[n])
		slices.Sort(g.skippedBy[n])
	}
	return g
}

// heads are the bundles no other replaces or skips, the way OLM finds a
// channel's head, by name.
func (g *upgradeGraph) heads() []string {
	var heads []string
	for _, n := range g.names {
		if g.incoming[n] == 0 {
			heads = append(heads, n)
		}
	}
	slices.Sort(heads)
	return heads
}

// Heads are the heads of the channel (exactly one in a valid channel), by
// name; versions are the package's bundles' versions.
func Heads(ch declcfg.Channel, versions map[string]semver.Version) []string {
	return newUpgradeGraph(ch, versions).heads()
}

// checkChannelGraph runs the graph checks on one channel.
func checkChannelGraph(ch declcfg.Channel, versions map[string]semver.Version) error {
	node := &Error{Subject: fmt.Sprintf("channel %q", ch.Name)}
	if len(ch.Entries) == 0 {
		node.add(fmt.Errorf("%w: the channel has no entries", ErrNoBundles))
		return node
	}
	g := newUpgradeGraph(ch, versions)

	for _, e := range ch.Entries {
		v, ok := versions[e.Name]
		if !ok {
			continue
		}
		older := func(kind, other string) {
			if ov, ok := versions[other]; ok && ov.GT(v) {
				node.add(fmt.Errorf("bundle %q (%s) %s %q (%s): %w; its users would be offered a downgrade", e.Name, v, kind, other, ov, ErrDowngrade))
			}
		}
		if e.Replaces != "" {
			older("replaces", e.Replaces)
		}
		for _, s := range e.Skips {
			older("skips", s)
		}
	}

	heads := g.heads()
	switch {
	case len(heads) == 0:
		node.add(fmt.Errorf("%w: found none, every bundle is replaced or skipped by another (a cycle)", ErrHeads))
		return node
	case len(heads) > 1:
		node.add(fmt.Errorf("%w: found %d (%s); all but the newest should be replaced or skipped", ErrHeads, len(heads), strings.Join(heads, ", ")))
		return node
	}
	head := heads[0]

	// Reachability through the edges OLM follows: never into a skipped bundle.
	live := func(n string) []string {
		var out []string
		for _, t := range g.to[n] {
			if len(g.skippedBy[t]) == 0 {
				out = append(out, t)
			}
		}
		return out
	}
	reaches := map[string]bool{head: true}
	// Walk backwards from the head over live edges.
	back := map[string][]string{}
	for _, n := range g.names {
		for _, t := range live(n) {
			back[t] = append(back[t], n)
		}
	}
	queue := []string{head}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, f := range back[cur] {
			if !reaches[f] {
				reaches[f] = true
				queue = append(queue, f)
			}
		}
	}
	names := slices.Clone(g.names)
	slices.SortFunc(names, func(a, b string) int { return versions[a].Compare(versions[b]) })
	for _, n := range names {
		if reaches[n] {
			continue
		}
		switch {
		case len(g.to[n]) == 0:
			node.add(fmt.Errorf("bundle %q: %w: no other bundle in the channel replaces, skips or skipRanges it, so its users never get an upgrade", n, ErrStranded))
		case len(live(n)) == 0:
			var by []string
			for _, t := range g.to[n] {
				by = append(by, fmt.Sprintf("%s (skipped by %s)", t, strings.Join(g.skippedBy[t], ", ")))
			}
			node.add(fmt.Errorf("bundle %q: %w: every upgrade from it leads to a skipped bundle: %s", n, ErrStrandingSkip, strings.Join(by, "; ")))
		default:
			node.add(fmt.Errorf("bundle %q: %w: its upgrades (%s) never lead to the head %q", n, ErrStranded, strings.Join(live(n), ", "), head))
		}
	}
	return node.orNil()
}

// placeholderObject is a valid olm.bundle.object value with no content.
var placeholderObject = json.RawMessage(`{"data":""}`)

// withoutObjectData returns cfg with the data of the olm.bundle.object
// properties that were already decoded into the bundle's Objects left out.
// operator-registry's validation decodes every property twice and checks
// no more of a bundle object than that it decodes: on a catalog of inline
// bundles that was most of its time, spent proving again what loading the
// catalog proved.
func withoutObjectData(cfg declcfg.DeclarativeConfig) declcfg.DeclarativeConfig {
	bundles := make([]declcfg.Bundle, len(cfg.Bundles))
	for i, b := range cfg.Bundles {
		n := 0
		for _, p := range b.Properties {
			if p.Type == property.TypeBundleObject {
				n++
			}
		}
		if n > 0 && n == len(b.Objects) {
			props := slices.Clone(b.Properties)
			for j := range props {
				if props[j].Type == property.TypeBundleObject {
					props[j].Value = placeholderObject
				}
			}
			b.Properties = props
		}
		bundles[i] = b
	}
	cfg.Bundles = bundles
	return cfg
}
