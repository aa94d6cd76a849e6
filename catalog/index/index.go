package index

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/pkg/api"
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
	// entry, in the order of opm's cache (channel, package, bundle name).
	listed []*api.Bundle
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

// New indexes cfg. It fails where opm serve fails to build its cache: on a
// catalog that does not convert to a valid model, and on a custom schema
// or package name a cache key cannot hold. The Index keeps no reference to
// cfg.
func New(cfg *declcfg.DeclarativeConfig) (*Index, error) {
	metas, err := indexMetas(cfg.Others)
	if err != nil {
		return nil, err
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return nil, fmt.Errorf("converting catalog: %w", err)
	}
	idx, err := fromModel(m)
	if err != nil {
		return nil, err
	}
	idx.metas = metas
	return idx, nil
}

// fromModel builds every answer from the model.
func fromModel(m model.Model) (*Index, error) {
	idx := &Index{
		packages:  make(map[string]*pkg, len(m)),
		replacing: map[string][]*api.ChannelEntry{},
		providers: map[gvk]*providers{},
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
			for _, b := range ch.Bundles {
				full, err := api.ConvertModelBundleToAPIBundle(*b)
				if err != nil {
					return nil, fmt.Errorf("package %q, channel %q, bundle %q: %w", p.Name, ch.Name, b.Name, err)
				}
				e := entry{full: full, trimmed: trimmed(full)}
				entries = append(entries, e)
				ic.bundles[b.Name] = e.trimmed
				idx.listed = append(idx.listed, listed(full))
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
				idx.indexReplaces(e.full)
				for _, k := range uniqueGVKs(e.full.ProvidedApis) {
					pr := idx.provider(k)
					pr.all = append(pr.all, channelEntries(e.full, nil)...)
				}
			}
			// Only the head's own channel counts for the skips of the
			// latest entries, as in opm.
			headFull := entries[slices.IndexFunc(entries, func(e entry) bool { return e.full.CsvName == head.Name })].full
			for _, k := range uniqueGVKs(headFull.ProvidedApis) {
				pr := idx.provider(k)
				pr.latest = append(pr.latest, channelEntries(headFull, ic.bundles)...)
			}
			ip.channels[ch.Name] = ic
		}
		slices.SortFunc(ap.Channels, func(a, b *api.Channel) int { return cmp.Compare(a.Name, b.Name) })
		idx.packages[p.Name] = ip
		idx.names = append(idx.names, &api.PackageName{Name: p.Name})
	}
	slices.SortFunc(idx.names, func(a, b *api.PackageName) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(idx.listed, func(a, b *api.Bundle) int {
		return cmp.Or(cmp.Compare(a.ChannelName, b.ChannelName), cmp.Compare(a.PackageName, b.PackageName), cmp.Compare(a.CsvName, b.CsvName))
	})
	idx.indexDefaultProviders()
	return idx, nil
}

// indexReplaces records the channel entries of b under each bundle it
// replaces or skips, once per mention, as opm lists them.
func (idx *Index) indexReplaces(b *api.Bundle) {
	e := &api.ChannelEntry{PackageName: b.PackageName, ChannelName: b.ChannelName, BundleName: b.CsvName, Replaces: b.Replaces}
	if b.Replaces != "" {
		idx.replacing[b.Replaces] = append(idx.replacing[b.Replaces], e)
	}
	for _, s := range b.Skips {
		if s != b.Replaces {
			idx.replacing[s] = append(idx.replacing[s], e)
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
