package index

import (
	"context"
	"fmt"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

var _ api.RegistryServer = (*Index)(nil)

// miss is the error of a query that finds nothing. opm answers these with
// gRPC code Unknown (a plain error) and these messages; clients such as
// OLM's resolver only tell an error from an answer, so the index keeps
// both to stay indistinguishable from opm.
func miss(format string, args ...any) error {
	return status.Error(codes.Unknown, fmt.Sprintf(format, args...))
}

// ListPackages sends the name of every package, by name.
func (idx *Index) ListPackages(_ *api.ListPackageRequest, stream api.Registry_ListPackagesServer) error {
	for _, n := range idx.names {
		if err := stream.Send(n); err != nil {
			return err
		}
	}
	return nil
}

// GetPackage returns a package with its channels (by name) and their heads.
func (idx *Index) GetPackage(_ context.Context, req *api.GetPackageRequest) (*api.Package, error) {
	p, ok := idx.packages[req.GetName()]
	if !ok {
		return nil, miss("package %q not found", req.GetName())
	}
	return p.api, nil
}

// GetBundle returns a bundle of a channel, without replaces and skips.
func (idx *Index) GetBundle(_ context.Context, req *api.GetBundleRequest) (*api.Bundle, error) {
	ch, err := idx.channel(req.GetPkgName(), req.GetChannelName(), "package %q not found")
	if err != nil {
		return nil, err
	}
	b, ok := ch.bundles[req.GetCsvName()]
	if !ok {
		return nil, miss("package %q, channel %q, bundle %q not found", req.GetPkgName(), req.GetChannelName(), req.GetCsvName())
	}
	return b, nil
}

// GetBundleForChannel returns the head of a channel.
func (idx *Index) GetBundleForChannel(_ context.Context, req *api.GetBundleInChannelRequest) (*api.Bundle, error) {
	ch, err := idx.channel(req.GetPkgName(), req.GetChannelName(), "package %q not found")
	if err != nil {
		return nil, err
	}
	return ch.head, nil
}

// GetChannelEntriesThatReplace sends the channel entries, in every package
// and channel, of the bundles that replace or skip a bundle.
func (idx *Index) GetChannelEntriesThatReplace(req *api.GetAllReplacementsRequest, stream api.Registry_GetChannelEntriesThatReplaceServer) error {
	entries := idx.replacing[req.GetCsvName()]
	if len(entries) == 0 {
		return miss("no channel entries found that replace %s", req.GetCsvName())
	}
	return sendEntries(entries, stream.Send)
}

// GetBundleThatReplaces returns the bundle of a channel that replaces or
// skips a bundle.
func (idx *Index) GetBundleThatReplaces(_ context.Context, req *api.GetReplacementRequest) (*api.Bundle, error) {
	// opm spells this one miss without quotes.
	ch, err := idx.channel(req.GetPkgName(), req.GetChannelName(), "package %s not found")
	if err != nil {
		return nil, err
	}
	b, ok := ch.replacer[req.GetCsvName()]
	if !ok {
		return nil, miss("no entry found for package %q, channel %q", req.GetPkgName(), req.GetChannelName())
	}
	return b, nil
}

// GetChannelEntriesThatProvide sends the channel entries of every bundle
// that provides an API.
func (idx *Index) GetChannelEntriesThatProvide(req *api.GetAllProvidersRequest, stream api.Registry_GetChannelEntriesThatProvideServer) error {
	k := gvk{req.GetGroup(), req.GetVersion(), req.GetKind()}
	pr := idx.providers[k]
	if pr == nil || len(pr.all) == 0 {
		return noProvider(k)
	}
	return sendEntries(pr.all, stream.Send)
}

// GetLatestChannelEntriesThatProvide sends the channel entries of the
// channel heads that provide an API.
func (idx *Index) GetLatestChannelEntriesThatProvide(req *api.GetLatestProvidersRequest, stream api.Registry_GetLatestChannelEntriesThatProvideServer) error {
	k := gvk{req.GetGroup(), req.GetVersion(), req.GetKind()}
	pr := idx.providers[k]
	if pr == nil || len(pr.latest) == 0 {
		return noProvider(k)
	}
	return sendEntries(pr.latest, stream.Send)
}

// GetDefaultBundleThatProvides returns the head of a default channel that
// provides an API, from the first such package by name.
func (idx *Index) GetDefaultBundleThatProvides(_ context.Context, req *api.GetDefaultProviderRequest) (*api.Bundle, error) {
	k := gvk{req.GetGroup(), req.GetVersion(), req.GetKind()}
	pr := idx.providers[k]
	if pr == nil || len(pr.latest) == 0 {
		return nil, noProvider(k)
	}
	if pr.byDefault == nil {
		return nil, miss("no entry found that provides group:%q version:%q kind:%q", k.group, k.version, k.kind)
	}
	return pr.byDefault, nil
}

// ListBundles sends every bundle of every channel, with replaces and
// skips; image-based ones without their CSV and manifests. The bundles go
// out pre-encoded, through the stream's SendMsg: a stream that is not a
// gRPC one must accept what SendMsg gets, not only *api.Bundle.
func (idx *Index) ListBundles(_ *api.ListBundlesRequest, stream api.Registry_ListBundlesServer) error {
	for _, b := range idx.listed {
		if err := stream.SendMsg(b); err != nil {
			return err
		}
	}
	return nil
}

// channel finds a channel; pkgMiss is the message for a missing package,
// which opm words differently per call.
func (idx *Index) channel(pkgName, chName, pkgMiss string) (*channel, error) {
	p, ok := idx.packages[pkgName]
	if !ok {
		return nil, miss(pkgMiss, pkgName)
	}
	ch, ok := p.channels[chName]
	if !ok {
		return nil, miss("package %q, channel %q not found", pkgName, chName)
	}
	return ch, nil
}

func noProvider(k gvk) error {
	return miss("no channel entries found that provide group:%q version:%q kind:%q", k.group, k.version, k.kind)
}

func sendEntries(entries []*api.ChannelEntry, send func(*api.ChannelEntry) error) error {
	for _, e := range entries {
		if err := send(e); err != nil {
			return err
		}
	}
	return nil
}

// acknowledgeExperimental is the request header without which the
// experimental calls answer nothing, so that unaware clients see no change.
const acknowledgeExperimental = "x-acknowledge-experimental"

// Experimental is the index's api.ExperimentalRegistryServer.
func (idx *Index) Experimental() api.ExperimentalRegistryServer { return experimental{idx: idx} }

type experimental struct {
	api.UnimplementedExperimentalRegistryServer
	idx *Index
}

// ExperimentalListPackageCustomSchemas sends the blobs of a custom schema
// in a package (or outside any package when the package is empty), in
// catalog order.
func (e experimental) ExperimentalListPackageCustomSchemas(req *api.ExperimentalListPackageCustomSchemasRequest, stream api.ExperimentalRegistry_ExperimentalListPackageCustomSchemasServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	if v := md.Get(acknowledgeExperimental); len(v) == 0 || v[0] != "true" {
		return nil
	}
	if req.GetSchema() == "" {
		return status.Error(codes.InvalidArgument, "schema is required")
	}
	if err := validMetaKey(req.GetSchema(), req.GetPackageName()); err != nil {
		return status.Errorf(codes.InvalidArgument, "invalid custom schema query: %v", err)
	}
	for _, m := range e.idx.metas[metaKey{req.GetSchema(), req.GetPackageName()}] {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}
