package index

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/pkg/api"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Index is a catalog converted for serving. It implements
// api.RegistryServer; Experimental returns its api.ExperimentalRegistryServer.
// It is read-only once built, so any number of calls may run at once.
type Index struct {
	api.UnimplementedRegistryServer

	packages map[string]*pkg
	// names are the packages' names, sorted.
	names []*api.PackageName
	// listed are the bundles as ListBundles sends them, one per channel
	// entry, in the order of opm's cache (channel, package, bundle name),
	// encoded once (see encoded).
	listed []*encodedAnswer
	// replacing maps a bundle name to the channel entries whose bundle
	// replaces or skips it, in every package and channel.
	replacing map[string][]*api.ChannelEntry
	// providers maps a provided API to the bundles that provide it.
	providers map[gvk]*providers
	// metas holds the blobs of schemas other than OLM's own, by schema and
	// package, for the experimental API.
	metas map[metaKey][]*structpb.Struct
}

// pkg is one package's answers.
type pkg struct {
	api            *api.Package
	defaultChannel string
	channels       map[string]*channel
}

// channel is one channel's answers. Its bundles are as the Get* calls
// return them: without replaces and skips.
type channel struct {
	head    *api.Bundle
	bundles map[string]*api.Bundle
	// replacer maps a bundle name to the bundle of this channel that
	// replaces or skips it (GetBundleThatReplaces).
	replacer map[string]*api.Bundle
}

// gvk is a provided API, as the Provide queries match it (plural ignored).
type gvk struct{ group, version, kind string }

// providers are the answers of the Provide queries for one API.
type providers struct {
	// all are the channel entries of every bundle that provides the API.
	all []*api.ChannelEntry
	// latest are the channel entries of the channel heads that provide it.
	latest []*api.ChannelEntry
	// byDefault is the head of a default channel that provides it, from the
	// first package by name; nil when no default channel's head does.
	byDefault *api.Bundle
}

// metaKey names the blobs of one custom schema in one package ("" for
// blobs outside any package).
type metaKey struct{ schema, pkg string }

// New indexes cfg, one package at a time on every CPU. It fails where opm
// serve fails to build its cache: on a package that does not convert to a
// valid model, and on a custom schema or package name a cache key cannot
// hold.
//
// New takes cfg over and empties it: each package's part of it can be
// collected as soon as that package is indexed, which keeps the peak
// memory of a server's start near the size of the index.
func New(cfg *declcfg.DeclarativeConfig) (*Index, error) {
	metas, err := indexMetas(cfg.Others)
	if err != nil {
		return nil, err
	}
	groups := byPackage(cfg)
	*cfg = declcfg.DeclarativeConfig{}

	parts := make([]*part, len(groups))
	errs := make([]error, len(groups))
	var eg errgroup.Group
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i := range groups {
		eg.Go(func() error {
			m, err := declcfg.ConvertToModel(*groups[i])
			// The blobs are in the model now (or of no use): let them go.
			groups[i] = nil
			if err != nil {
				errs[i] = fmt.Errorf("converting catalog: %w", err)
				return nil
			}
			parts[i], errs[i] = indexPackages(m)
			return nil
		})
	}
	eg.Wait()
	// The first error in package order, the same on every start.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	idx := &Index{
		packages:  map[string]*pkg{},
		replacing: map[string][]*api.ChannelEntry{},
		providers: map[gvk]*providers{},
		metas:     metas,
	}
	var listed []listedBundle
	for _, p := range parts {
		idx.merge(p)
		listed = append(listed, p.listed...)
	}
	slices.SortFunc(idx.names, func(a, b *api.PackageName) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(listed, func(a, b listedBundle) int {
		return cmp.Or(cmp.Compare(a.channel, b.channel), cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.name, b.name))
	})
	idx.listed = make([]*encodedAnswer, len(listed))
	for i, l := range listed {
		idx.listed[i] = l.msg
	}
	idx.indexDefaultProviders()
	return idx, nil
}

// byPackage splits cfg by package name (blobs naming a package without its
// olm.package blob make a group that fails to convert, as in opm), in
// package name order.
func byPackage(cfg *declcfg.DeclarativeConfig) []*declcfg.DeclarativeConfig {
	groups := map[string]*declcfg.DeclarativeConfig{}
	group := func(name string) *declcfg.DeclarativeConfig {
		g, ok := groups[name]
		if !ok {
			g = &declcfg.DeclarativeConfig{}
			groups[name] = g
		}
		return g
	}
	for _, p := range cfg.Packages {
		g := group(p.Name)
		g.Packages = append(g.Packages, p)
	}
	for _, c := range cfg.Channels {
		g := group(c.Package)
		g.Channels = append(g.Channels, c)
	}
	for _, b := range cfg.Bundles {
		g := group(b.Package)
		g.Bundles = append(g.Bundles, b)
	}
	for _, d := range cfg.Deprecations {
		g := group(d.Package)
		g.Deprecations = append(g.Deprecations, d)
	}
	names := slices.Sorted(maps.Keys(groups))
	out := make([]*declcfg.DeclarativeConfig, len(names))
	for i, n := range names {
		out[i] = groups[n]
	}
	return out
}

// listedBundle is an encoded ListBundles answer with its sort keys.
type listedBundle struct {
	channel, pkg, name string
	msg                *encodedAnswer
}

// encodedAnswer is a message encoded once, so that the server does not
// encode the whole catalog again on every ListBundles, the most expensive
// call. It carries the encoding twice over, in the same bytes: as the
// unknown fields of an empty message, which any proto codec writes out
// verbatim (a client receives an api.Bundle), and as a buffer that Codec
// hands to gRPC as it is.
type encodedAnswer struct {
	*emptypb.Empty
	wire mem.BufferSlice
}

// encoded returns m encoded once.
func encoded(m proto.Message) (*encodedAnswer, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	e := &emptypb.Empty{}
	e.ProtoReflect().SetUnknown(b)
	// A SliceBuffer is never returned to a pool: gRPC frees the buffers
	// it has written, and these are written again on the next call.
	return &encodedAnswer{Empty: e, wire: mem.BufferSlice{mem.SliceBuffer(b)}}, nil
}

// part is the index of some packages, merged into the Index when every
// package is done.
type part struct {
	packages  map[string]*pkg
	listed    []listedBundle
	replacing map[string][]*api.ChannelEntry
	all       map[gvk][]*api.ChannelEntry
	latest    map[gvk][]*api.ChannelEntry
}

func (idx *Index) merge(p *part) {
	for name, ip := range p.packages {
		idx.packages[name] = ip
		idx.names = append(idx.names, &api.PackageName{Name: name})
	}
	for name, es := range p.replacing {
		idx.replacing[name] = append(idx.replacing[name], es...)
	}
	for k, es := range p.all {
		pr := idx.provider(k)
		pr.all = append(pr.all, es...)
	}
	for k, es := range p.latest {
		pr := idx.provider(k)
		pr.latest = append(pr.latest, es...)
	}
}

// indexPackages builds every answer about the packages of m.
func indexPackages(m model.Model) (*part, error) {
	pt := &part{
		packages:  make(map[string]*pkg, len(m)),
		replacing: map[string][]*api.ChannelEntry{},
		all:       map[gvk][]*api.ChannelEntry{},
		latest:    map[gvk][]*api.ChannelEntry{},
	}
	// full holds every bundle with replaces and skips, for the graph
	// indexes; the trimmed copies are what the Get* calls return.
	type entry struct {
		full    *api.Bundle
		trimmed *api.Bundle
	}
	for _, p := range m {
		ap := &api.Package{Name: p.Name, DefaultChannelName: p.DefaultChannel.Name, Deprecation: deprecation(p.Deprecation)}
		ip := &pkg{api: ap, defaultChannel: p.DefaultChannel.Name, channels: make(map[string]*channel, len(p.Channels))}
		for _, ch := range p.Channels {
			head, err := ch.Head()
			if err != nil {
				return nil, fmt.Errorf("package %q, channel %q: %w", p.Name, ch.Name, err)
			}
			ap.Channels = append(ap.Channels, &api.Channel{Name: ch.Name, CsvName: head.Name, Deprecation: deprecation(ch.Deprecation)})
			ic := &channel{bundles: make(map[string]*api.Bundle, len(ch.Bundles))}
			entries := make([]entry, 0, len(ch.Bundles))
			var headFull *api.Bundle
			for _, b := range ch.Bundles {
				full, err := api.ConvertModelBundleToAPIBundle(*b)
				if err != nil {
					return nil, fmt.Errorf("package %q, channel %q, bundle %q: %w", p.Name, ch.Name, b.Name, err)
				}
				shareCSV(full)
				e := entry{full: full, trimmed: trimmed(full)}
				entries = append(entries, e)
				ic.bundles[b.Name] = e.trimmed
				l, err := encoded(listed(full))
				if err != nil {
					return nil, fmt.Errorf("package %q, channel %q, bundle %q: %w", p.Name, ch.Name, b.Name, err)
				}
				pt.listed = append(pt.listed, listedBundle{channel: ch.Name, pkg: p.Name, name: b.Name, msg: l})
				if b.Name == head.Name {
					headFull = full
				}
			}
			ic.head = ic.bundles[head.Name]
			// By name, so that the replacer chosen among several is the
			// same on every start.
			slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.full.CsvName, b.full.CsvName) })
			ic.replacer = map[string]*api.Bundle{}
			for _, e := range entries {
				if r := e.full.Replaces; r != "" {
					if _, ok := ic.replacer[r]; !ok {
						ic.replacer[r] = e.trimmed
					}
				}
			}
			for _, e := range entries {
				for _, s := range e.full.Skips {
					if _, ok := ic.replacer[s]; !ok {
						ic.replacer[s] = e.trimmed
					}
				}
				pt.indexReplaces(e.full)
				for _, k := range uniqueGVKs(e.full.ProvidedApis) {
					pt.all[k] = append(pt.all[k], channelEntries(e.full, nil)...)
				}
			}
			// Only the head's own channel counts for the skips of the
			// latest entries, as in opm.
			for _, k := range uniqueGVKs(headFull.ProvidedApis) {
				pt.latest[k] = append(pt.latest[k], channelEntries(headFull, ic.bundles)...)
			}
			ip.channels[ch.Name] = ic
		}
		slices.SortFunc(ap.Channels, func(a, b *api.Channel) int { return cmp.Compare(a.Name, b.Name) })
		pt.packages[p.Name] = ip
	}
	return pt, nil
}

// shareCSV points the bundle's CSV at its copy among the manifests: the
// loader decodes them into two strings, and the CSV is the largest manifest
// of most bundles.
func shareCSV(b *api.Bundle) {
	for _, o := range b.Object {
		if len(o) == len(b.CsvJson) && o == b.CsvJson {
			b.CsvJson = o
			return
		}
	}
}

// indexReplaces records the channel entries of b under each bundle it
// replaces or skips, once per mention, as opm lists them.
func (pt *part) indexReplaces(b *api.Bundle) {
	e := &api.ChannelEntry{PackageName: b.PackageName, ChannelName: b.ChannelName, BundleName: b.CsvName, Replaces: b.Replaces}
	if b.Replaces != "" {
		pt.replacing[b.Replaces] = append(pt.replacing[b.Replaces], e)
	}
	for _, s := range b.Skips {
		if s != b.Replaces {
			pt.replacing[s] = append(pt.replacing[s], e)
		}
	}
}

func (idx *Index) provider(k gvk) *providers {
	pr, ok := idx.providers[k]
	if !ok {
		pr = &providers{}
		idx.providers[k] = pr
	}
	return pr
}

// indexDefaultProviders picks, for each provided API, the head of a
// default channel that provides it, from the first package by name.
func (idx *Index) indexDefaultProviders() {
	for _, pr := range idx.providers {
		for _, e := range pr.latest {
			p := idx.packages[e.PackageName]
			if e.ChannelName != p.defaultChannel {
				continue
			}
			if pr.byDefault == nil || e.PackageName < pr.byDefault.PackageName {
				pr.byDefault = p.channels[e.ChannelName].bundles[e.BundleName]
			}
		}
	}
}

// channelEntries are the channel entries of b: one for its replaces and
// one per skip that is not its replaces. With inChannel set, only skips of
// bundles in that channel count.
func channelEntries(b *api.Bundle, inChannel map[string]*api.Bundle) []*api.ChannelEntry {
	out := []*api.ChannelEntry{{PackageName: b.PackageName, ChannelName: b.ChannelName, BundleName: b.CsvName, Replaces: b.Replaces}}
	for _, s := range b.Skips {
		if s == b.Replaces {
			continue
		}
		if _, ok := inChannel[s]; inChannel != nil && !ok {
			continue
		}
		out = append(out, &api.ChannelEntry{PackageName: b.PackageName, ChannelName: b.ChannelName, BundleName: b.CsvName, Replaces: s})
	}
	return out
}

// uniqueGVKs are the provided APIs of a bundle, each once: a bundle that
// lists an API twice is still one provider of it.
func uniqueGVKs(in []*api.GroupVersionKind) []gvk {
	var out []gvk
	for _, a := range in {
		if k := (gvk{a.Group, a.Version, a.Kind}); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// trimmed is b as the Get* calls return it: without replaces and skips.
// The fields are shared with b, not copied.
func trimmed(b *api.Bundle) *api.Bundle {
	return &api.Bundle{
		CsvName:      b.CsvName,
		PackageName:  b.PackageName,
		ChannelName:  b.ChannelName,
		CsvJson:      b.CsvJson,
		Object:       b.Object,
		BundlePath:   b.BundlePath,
		ProvidedApis: b.ProvidedApis,
		RequiredApis: b.RequiredApis,
		Version:      b.Version,
		SkipRange:    b.SkipRange,
		Dependencies: b.Dependencies,
		Properties:   b.Properties,
		Deprecation:  b.Deprecation,
	}
}

// listed is b as ListBundles sends it: an image-based bundle goes without
// its CSV and manifests, which OLM reads from the image (opm does the same,
// after its SQLite server).
func listed(b *api.Bundle) *api.Bundle {
	if b.BundlePath == "" {
		return b
	}
	l := trimmed(b)
	l.Replaces, l.Skips = b.Replaces, b.Skips
	l.CsvJson, l.Object = "", nil
	return l
}

func deprecation(d *model.Deprecation) *api.Deprecation {
	if d == nil {
		return nil
	}
	return &api.Deprecation{Message: d.Message}
}

// metaKeyPart is what opm accepts as a schema or package name in a cache
// key (no path separators).
var metaKeyPart = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// validMetaKey checks a custom schema query's or blob's schema and package
// as opm does, with opm's messages.
func validMetaKey(schema, pkg string) error {
	if schema == "" {
		return fmt.Errorf("invalid schema: must not be empty")
	}
	if !metaKeyPart.MatchString(schema) {
		return fmt.Errorf("invalid schema %q: must match %s", schema, metaKeyPart)
	}
	if pkg != "" && !metaKeyPart.MatchString(pkg) {
		return fmt.Errorf("invalid packageName %q: must match %s", pkg, metaKeyPart)
	}
	return nil
}

// indexMetas parses the blobs of custom schemas. opm refuses to serve a
// catalog whose custom schema or package name its cache cannot key, and so
// does New: a catalog served by chartpilot is one opm also serves.
func indexMetas(others []declcfg.Meta) (map[metaKey][]*structpb.Struct, error) {
	metas := map[metaKey][]*structpb.Struct{}
	for _, m := range others {
		if err := validMetaKey(m.Schema, m.Package); err != nil {
			return nil, fmt.Errorf("custom schema blob %q of package %q: %w", m.Schema, m.Package, err)
		}
		st := &structpb.Struct{}
		if err := st.UnmarshalJSON(m.Blob); err != nil {
			return nil, fmt.Errorf("custom schema blob %q of package %q: %w", m.Schema, m.Package, err)
		}
		k := metaKey{m.Schema, m.Package}
		metas[k] = append(metas[k], st)
	}
	return metas, nil
}
