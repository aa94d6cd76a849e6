package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// csvObject is a minimal CSV manifest, as an inline bundle carries it.
func csvObject(name string) string {
	return fmt.Sprintf(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":%q}}`, name)
}

// bundle is an olm.bundle blob: image-based when image is set, inline
// (its CSV in an olm.bundle.object property) otherwise.
func bundle(pkg, name, version, image string, props ...property.Property) declcfg.Bundle {
	b := declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: name, Image: image,
		Properties: append([]property.Property{property.MustBuildPackage(pkg, version)}, props...)}
	if image == "" {
		csv := csvObject(name)
		b.Properties = append(b.Properties, property.MustBuildBundleObject([]byte(csv)))
		b.CsvJSON, b.Objects = csv, []string{csv}
	}
	return b
}

var (
	etcdCluster = property.MustBuildGVK("etcd.example.com", "v1", "EtcdCluster")
	etcdBackup  = property.MustBuildGVK("etcd.example.com", "v1", "EtcdBackup")
	zeta        = property.MustBuildGVK("zeta.example.com", "v1", "Zeta")
)

// testCatalog has:
//   - etcd (image-based): stable v1 <- v2 <- v3 (v3 skips v1, skipRange
//     <3.0.0), fast v3 <- v4, default channel stable (head v3) while fast's
//     head v4 is newer; the package, channel fast and bundle v1 deprecated;
//   - prom (inline): beta p1 <- p2 (p2 also skips p1 and a bundle not in
//     the catalog), requiring EtcdCluster and package etcd, providing
//     EtcdCluster;
//   - zeta: default channel a (z1), channel b (z2) the only provider of Zeta;
//   - a custom schema blob in prom and one outside any package.
func testCatalog() *declcfg.DeclarativeConfig {
	return &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{
			{Schema: declcfg.SchemaPackage, Name: "etcd", DefaultChannel: "stable"},
			{Schema: declcfg.SchemaPackage, Name: "prom", DefaultChannel: "beta"},
			{Schema: declcfg.SchemaPackage, Name: "zeta", DefaultChannel: "a"},
		},
		Channels: []declcfg.Channel{
			{Schema: declcfg.SchemaChannel, Package: "etcd", Name: "stable", Entries: []declcfg.ChannelEntry{
				{Name: "etcd.v1"}, {Name: "etcd.v2", Replaces: "etcd.v1"},
				{Name: "etcd.v3", Replaces: "etcd.v2", Skips: []string{"etcd.v1"}, SkipRange: "<3.0.0"},
			}},
			{Schema: declcfg.SchemaChannel, Package: "etcd", Name: "fast", Entries: []declcfg.ChannelEntry{
				{Name: "etcd.v3"}, {Name: "etcd.v4", Replaces: "etcd.v3"},
			}},
			{Schema: declcfg.SchemaChannel, Package: "prom", Name: "beta", Entries: []declcfg.ChannelEntry{
				{Name: "prom.p1"}, {Name: "prom.p2", Replaces: "prom.p1", Skips: []string{"prom.p1", "prom.p0"}},
			}},
			{Schema: declcfg.SchemaChannel, Package: "zeta", Name: "a", Entries: []declcfg.ChannelEntry{{Name: "zeta.z1"}}},
			{Schema: declcfg.SchemaChannel, Package: "zeta", Name: "b", Entries: []declcfg.ChannelEntry{{Name: "zeta.z2"}}},
		},
		Bundles: []declcfg.Bundle{
			bundle("etcd", "etcd.v1", "1.0.0", "registry.example.com/etcd:v1", etcdCluster),
			bundle("etcd", "etcd.v2", "2.0.0", "registry.example.com/etcd:v2", etcdCluster),
			bundle("etcd", "etcd.v3", "3.0.0", "registry.example.com/etcd:v3", etcdCluster),
			bundle("etcd", "etcd.v4", "4.0.0", "registry.example.com/etcd:v4", etcdCluster, etcdBackup, etcdBackup),
			bundle("prom", "prom.p1", "1.0.0", "", etcdCluster),
			bundle("prom", "prom.p2", "2.0.0", "", etcdCluster,
				property.MustBuildGVKRequired("etcd.example.com", "v1", "EtcdCluster"),
				property.MustBuildPackageRequired("etcd", ">=1.0.0")),
			bundle("zeta", "zeta.z1", "1.0.0", ""),
			bundle("zeta", "zeta.z2", "2.0.0", "", zeta),
		},
		Deprecations: []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: "etcd", Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "etcd is retired"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: "fast"}, Message: "fast is frozen"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: "etcd.v1"}, Message: "v1 is broken"},
		}}},
		Others: []declcfg.Meta{
			{Schema: "example.widget", Package: "prom", Name: "w1", Blob: json.RawMessage(`{"schema":"example.widget","package":"prom","name":"w1"}`)},
			{Schema: "example.widget", Package: "prom", Name: "w2", Blob: json.RawMessage(`{"schema":"example.widget","package":"prom","name":"w2"}`)},
			{Schema: "example.global", Name: "g", Blob: json.RawMessage(`{"schema":"example.global","name":"g"}`)},
		},
	}
}

// serve serves idx over gRPC on loopback and returns clients of both APIs.
func serve(t *testing.T, idx *Index) (api.RegistryClient, api.ExperimentalRegistryClient) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	api.RegisterRegistryServer(s, idx)
	api.RegisterExperimentalRegistryServer(s, idx.Experimental())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewRegistryClient(conn), api.NewExperimentalRegistryClient(conn)
}

// describe is a bundle in one line: where it is, its graph fields, and what
// it carries.
func describe(b *api.Bundle) string {
	var provided []string
	for _, g := range b.ProvidedApis {
		provided = append(provided, g.Kind)
	}
	s := fmt.Sprintf("%s/%s/%s replaces=%q skips=%v skipRange=%q provides=%v csv=%t objects=%d",
		b.PackageName, b.ChannelName, b.CsvName, b.Replaces, b.Skips, b.SkipRange, provided, b.CsvJson != "", len(b.Object))
	if b.BundlePath != "" {
		s += " image=" + b.BundlePath
	}
	if len(b.RequiredApis) > 0 || len(b.Dependencies) > 0 {
		s += fmt.Sprintf(" requires=%d dependencies=%d", len(b.RequiredApis), len(b.Dependencies))
	}
	if b.Deprecation != nil {
		s += " deprecated=" + b.Deprecation.Message
	}
	return s
}

func entry(e *api.ChannelEntry) string {
	return e.PackageName + "/" + e.ChannelName + "/" + e.BundleName + " replaces " + e.Replaces
}

// drain returns a function that receives a stream to its end and
// describes each message, sorted (opm promises no order).
func drain[T any](describe func(*T) string) func(interface{ Recv() (*T, error) }, error) ([]string, error) {
	return func(s interface{ Recv() (*T, error) }, err error) ([]string, error) {
		if err != nil {
			return nil, err
		}
		var out []string
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return out, err
			}
			out = append(out, describe(m))
		}
		slices.Sort(out)
		return out, nil
	}
}

// one returns a function that describes a unary answer.
func one[T any](describe func(*T) string) func(*T, error) ([]string, error) {
	return func(m *T, err error) ([]string, error) {
		if err != nil {
			return nil, err
		}
		return []string{describe(m)}, nil
	}
}

func describePackage(p *api.Package) string {
	s := fmt.Sprintf("%s default=%s", p.Name, p.DefaultChannelName)
	for _, c := range p.Channels {
		s += " " + c.Name + "->" + c.CsvName
		if c.Deprecation != nil {
			s += "(" + c.Deprecation.Message + ")"
		}
	}
	if p.Deprecation != nil {
		s += " deprecated=" + p.Deprecation.Message
	}
	return s
}

// apiOf splits an olm.gvk property into a request's group, version, kind.
func apiOf(t *testing.T, g property.Property) (group, version, kind string) {
	t.Helper()
	var v property.GVK
	if err := json.Unmarshal(g.Value, &v); err != nil {
		t.Fatal(err)
	}
	return v.Group, v.Version, v.Kind
}

func TestIndexAnswers(t *testing.T) {
	idx, err := New(testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	client, experimental := serve(t, idx)
	ctx := t.Context()
	provides := func(g property.Property) *api.GetAllProvidersRequest {
		group, version, kind := apiOf(t, g)
		return &api.GetAllProvidersRequest{Group: group, Version: version, Kind: kind}
	}
	latest := func(g property.Property) *api.GetLatestProvidersRequest {
		group, version, kind := apiOf(t, g)
		return &api.GetLatestProvidersRequest{Group: group, Version: version, Kind: kind}
	}
	byDefault := func(g property.Property) *api.GetDefaultProviderRequest {
		group, version, kind := apiOf(t, g)
		return &api.GetDefaultProviderRequest{Group: group, Version: version, Kind: kind}
	}
	bundles, entries := one(describe), drain(entry)
	missing := property.MustBuildGVK("missing.example.com", "v1", "Nothing")
	custom := func(ctx context.Context, schema, pkg string) ([]string, error) {
		return drain(func(s *structpb.Struct) string { return s.Fields["name"].GetStringValue() })(
			experimental.ExperimentalListPackageCustomSchemas(ctx, &api.ExperimentalListPackageCustomSchemasRequest{Schema: schema, PackageName: pkg}))
	}
	ack := metadata.AppendToOutgoingContext(ctx, acknowledgeExperimental, "true")

	tests := []struct {
		name string
		call func() ([]string, error)
		want []string
		// wantErr is the gRPC error as "code: message"; opm's messages.
		wantErr string
	}{{
		name: "ListPackages names every package",
		call: func() ([]string, error) {
			return drain(func(p *api.PackageName) string { return p.Name })(client.ListPackages(ctx, &api.ListPackageRequest{}))
		},
		want: []string{"etcd", "prom", "zeta"},
	}, {
		name: "GetPackage: channels by name with their heads and deprecations",
		call: func() ([]string, error) {
			return one(describePackage)(client.GetPackage(ctx, &api.GetPackageRequest{Name: "etcd"}))
		},
		want: []string{"etcd default=stable fast->etcd.v4(fast is frozen) stable->etcd.v3 deprecated=etcd is retired"},
	}, {
		name: "GetPackage of a missing package",
		call: func() ([]string, error) {
			return one(describePackage)(client.GetPackage(ctx, &api.GetPackageRequest{Name: "nope"}))
		},
		wantErr: `Unknown: package "nope" not found`,
	}, {
		name: "GetBundle: no replaces or skips, an image bundle keeps its (empty) CSV",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "etcd", ChannelName: "stable", CsvName: "etcd.v3"}))
		},
		want: []string{`etcd/stable/etcd.v3 replaces="" skips=[] skipRange="<3.0.0" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v3`},
	}, {
		name: "GetBundle: a deprecated bundle",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "etcd", ChannelName: "stable", CsvName: "etcd.v1"}))
		},
		want: []string{`etcd/stable/etcd.v1 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v1 deprecated=v1 is broken`},
	}, {
		name: "GetBundle: an inline bundle with its CSV, requirements and dependencies",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "prom", ChannelName: "beta", CsvName: "prom.p2"}))
		},
		want: []string{`prom/beta/prom.p2 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=true objects=1 requires=1 dependencies=2`},
	}, {
		name: "GetBundle of a missing package",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "nope", ChannelName: "stable", CsvName: "etcd.v1"}))
		},
		wantErr: `Unknown: package "nope" not found`,
	}, {
		name: "GetBundle of a missing channel",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "etcd", ChannelName: "nope", CsvName: "etcd.v1"}))
		},
		wantErr: `Unknown: package "etcd", channel "nope" not found`,
	}, {
		name: "GetBundle of a bundle in another channel",
		call: func() ([]string, error) {
			return bundles(client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "etcd", ChannelName: "fast", CsvName: "etcd.v1"}))
		},
		wantErr: `Unknown: package "etcd", channel "fast", bundle "etcd.v1" not found`,
	}, {
		name: "GetBundleForChannel: the head of a channel other than the default",
		call: func() ([]string, error) {
			return bundles(client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: "etcd", ChannelName: "fast"}))
		},
		want: []string{`etcd/fast/etcd.v4 replaces="" skips=[] skipRange="" provides=[EtcdCluster EtcdBackup EtcdBackup] csv=false objects=0 image=registry.example.com/etcd:v4`},
	}, {
		name: "GetBundleForChannel of a missing channel",
		call: func() ([]string, error) {
			return bundles(client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: "etcd", ChannelName: "nope"}))
		},
		wantErr: `Unknown: package "etcd", channel "nope" not found`,
	}, {
		name: "GetChannelEntriesThatReplace: by replaces and by skips, in every channel",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "etcd.v1"}))
		},
		want: []string{"etcd/stable/etcd.v2 replaces etcd.v1", "etcd/stable/etcd.v3 replaces etcd.v2"},
	}, {
		name: "GetChannelEntriesThatReplace: a skip that repeats the replaces counts once",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "prom.p1"}))
		},
		want: []string{"prom/beta/prom.p2 replaces prom.p1"},
	}, {
		name: "GetChannelEntriesThatReplace: a skipped bundle outside the catalog",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "prom.p0"}))
		},
		want: []string{"prom/beta/prom.p2 replaces prom.p1"},
	}, {
		name: "GetChannelEntriesThatReplace of a head",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "etcd.v4"}))
		},
		wantErr: "Unknown: no channel entries found that replace etcd.v4",
	}, {
		name: "GetBundleThatReplaces: the bundle that replaces beats the one that skips",
		call: func() ([]string, error) {
			return bundles(client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: "etcd", ChannelName: "stable", CsvName: "etcd.v1"}))
		},
		want: []string{`etcd/stable/etcd.v2 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v2`},
	}, {
		name: "GetBundleThatReplaces: by skips alone",
		call: func() ([]string, error) {
			return bundles(client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: "prom", ChannelName: "beta", CsvName: "prom.p0"}))
		},
		want: []string{`prom/beta/prom.p2 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=true objects=1 requires=1 dependencies=2`},
	}, {
		name: "GetBundleThatReplaces: only in the channel asked",
		call: func() ([]string, error) {
			return bundles(client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: "etcd", ChannelName: "fast", CsvName: "etcd.v1"}))
		},
		wantErr: `Unknown: no entry found for package "etcd", channel "fast"`,
	}, {
		name: "GetBundleThatReplaces of a missing package: opm's unquoted message",
		call: func() ([]string, error) {
			return bundles(client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: "nope", ChannelName: "fast", CsvName: "etcd.v1"}))
		},
		wantErr: `Unknown: package nope not found`,
	}, {
		name: "GetChannelEntriesThatProvide: every bundle of every channel, skips outside the channel too",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatProvide(ctx, provides(etcdCluster)))
		},
		want: []string{
			"etcd/fast/etcd.v3 replaces ", "etcd/fast/etcd.v4 replaces etcd.v3",
			"etcd/stable/etcd.v1 replaces ", "etcd/stable/etcd.v2 replaces etcd.v1",
			"etcd/stable/etcd.v3 replaces etcd.v1", "etcd/stable/etcd.v3 replaces etcd.v2",
			"prom/beta/prom.p1 replaces ", "prom/beta/prom.p2 replaces prom.p0", "prom/beta/prom.p2 replaces prom.p1",
		},
	}, {
		name: "GetChannelEntriesThatProvide: an API listed twice by a bundle counts once",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatProvide(ctx, provides(etcdBackup)))
		},
		want: []string{"etcd/fast/etcd.v4 replaces etcd.v3"},
	}, {
		name: "GetChannelEntriesThatProvide of an API nobody provides",
		call: func() ([]string, error) {
			return entries(client.GetChannelEntriesThatProvide(ctx, provides(missing)))
		},
		wantErr: `Unknown: no channel entries found that provide group:"missing.example.com" version:"v1" kind:"Nothing"`,
	}, {
		name: "GetLatestChannelEntriesThatProvide: heads only, skips only within the channel",
		call: func() ([]string, error) {
			return entries(client.GetLatestChannelEntriesThatProvide(ctx, latest(etcdCluster)))
		},
		want: []string{
			"etcd/fast/etcd.v4 replaces etcd.v3",
			"etcd/stable/etcd.v3 replaces etcd.v1", "etcd/stable/etcd.v3 replaces etcd.v2",
			"prom/beta/prom.p2 replaces prom.p1",
		},
	}, {
		name: "GetLatestChannelEntriesThatProvide of an API nobody provides",
		call: func() ([]string, error) {
			return entries(client.GetLatestChannelEntriesThatProvide(ctx, latest(missing)))
		},
		wantErr: `Unknown: no channel entries found that provide group:"missing.example.com" version:"v1" kind:"Nothing"`,
	}, {
		name: "GetDefaultBundleThatProvides: the default channel's head of the first package by name",
		call: func() ([]string, error) {
			return bundles(client.GetDefaultBundleThatProvides(ctx, byDefault(etcdCluster)))
		},
		want: []string{`etcd/stable/etcd.v3 replaces="" skips=[] skipRange="<3.0.0" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v3`},
	}, {
		name: "GetDefaultBundleThatProvides: provided only outside a default channel",
		call: func() ([]string, error) {
			return bundles(client.GetDefaultBundleThatProvides(ctx, byDefault(etcdBackup)))
		},
		wantErr: `Unknown: no entry found that provides group:"etcd.example.com" version:"v1" kind:"EtcdBackup"`,
	}, {
		name: "GetDefaultBundleThatProvides: provided only by a head of another channel",
		call: func() ([]string, error) {
			return bundles(client.GetDefaultBundleThatProvides(ctx, byDefault(zeta)))
		},
		wantErr: `Unknown: no entry found that provides group:"zeta.example.com" version:"v1" kind:"Zeta"`,
	}, {
		name: "GetDefaultBundleThatProvides of an API nobody provides",
		call: func() ([]string, error) {
			return bundles(client.GetDefaultBundleThatProvides(ctx, byDefault(missing)))
		},
		wantErr: `Unknown: no channel entries found that provide group:"missing.example.com" version:"v1" kind:"Nothing"`,
	}, {
		name: "ListBundles: one per channel entry with replaces and skips, image bundles without CSV",
		call: func() ([]string, error) {
			return drain(describe)(client.ListBundles(ctx, &api.ListBundlesRequest{}))
		},
		want: []string{
			// The skipRange is the channel entry's: stable's, not fast's.
			`etcd/fast/etcd.v3 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v3`,
			`etcd/fast/etcd.v4 replaces="etcd.v3" skips=[] skipRange="" provides=[EtcdCluster EtcdBackup EtcdBackup] csv=false objects=0 image=registry.example.com/etcd:v4`,
			`etcd/stable/etcd.v1 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v1 deprecated=v1 is broken`,
			`etcd/stable/etcd.v2 replaces="etcd.v1" skips=[] skipRange="" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v2`,
			`etcd/stable/etcd.v3 replaces="etcd.v2" skips=[etcd.v1] skipRange="<3.0.0" provides=[EtcdCluster] csv=false objects=0 image=registry.example.com/etcd:v3`,
			`prom/beta/prom.p1 replaces="" skips=[] skipRange="" provides=[EtcdCluster] csv=true objects=1`,
			`prom/beta/prom.p2 replaces="prom.p1" skips=[prom.p1 prom.p0] skipRange="" provides=[EtcdCluster] csv=true objects=1 requires=1 dependencies=2`,
			`zeta/a/zeta.z1 replaces="" skips=[] skipRange="" provides=[] csv=true objects=1`,
			`zeta/b/zeta.z2 replaces="" skips=[] skipRange="" provides=[Zeta] csv=true objects=1`,
		},
	}, {
		name: "custom schema blobs of a package, in catalog order",
		call: func() ([]string, error) { return custom(ack, "example.widget", "prom") },
		want: []string{"w1", "w2"},
	}, {
		name: "custom schema blobs outside any package",
		call: func() ([]string, error) { return custom(ack, "example.global", "") },
		want: []string{"g"},
	}, {
		name: "custom schema blobs of another package: none",
		call: func() ([]string, error) { return custom(ack, "example.widget", "etcd") },
	}, {
		name: "custom schema blobs without the experimental header: none",
		call: func() ([]string, error) { return custom(ctx, "example.widget", "prom") },
	}, {
		name:    "custom schema query without a schema",
		call:    func() ([]string, error) { return custom(ack, "", "prom") },
		wantErr: "InvalidArgument: schema is required",
	}, {
		name:    "custom schema query with a path for a package",
		call:    func() ([]string, error) { return custom(ack, "example.widget", "../etc") },
		wantErr: `InvalidArgument: invalid custom schema query: invalid packageName "../etc": must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if err != nil {
				st := status.Convert(err)
				if gotErr := st.Code().String() + ": " + st.Message(); gotErr != tt.wantErr {
					t.Fatalf("error %q, want %q", gotErr, tt.wantErr)
				}
				return
			}
			if tt.wantErr != "" {
				t.Fatalf("answered %q, want error %q", got, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		// change breaks the test catalog.
		change  func(*declcfg.DeclarativeConfig)
		wantErr string
	}{{
		name: "a bundle in no channel",
		change: func(c *declcfg.DeclarativeConfig) {
			c.Bundles = append(c.Bundles, bundle("zeta", "zeta.z3", "3.0.0", ""))
		},
		wantErr: `bundle "zeta.z3" not found in any channel entries`,
	}, {
		name: "a channel with two heads",
		change: func(c *declcfg.DeclarativeConfig) {
			c.Channels[4].Entries = append(c.Channels[4].Entries, declcfg.ChannelEntry{Name: "zeta.z1"})
		},
		wantErr: "multiple channel heads found in graph: zeta.z1, zeta.z2",
	}, {
		name: "a custom schema with a path separator",
		change: func(c *declcfg.DeclarativeConfig) {
			c.Others = append(c.Others, declcfg.Meta{Schema: "example.com/widget", Package: "prom", Blob: json.RawMessage(`{}`)})
		},
		wantErr: `custom schema blob "example.com/widget" of package "prom": invalid schema "example.com/widget"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testCatalog()
			tt.change(cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// New empties the config it is given, so that a server does not hold the
// catalog twice.
func TestNewTakesTheConfigOver(t *testing.T) {
	cfg := testCatalog()
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Packages != nil || cfg.Channels != nil || cfg.Bundles != nil || cfg.Deprecations != nil || cfg.Others != nil {
		t.Errorf("config still holds %d packages, %d channels, %d bundles, %d deprecations, %d others",
			len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), len(cfg.Deprecations), len(cfg.Others))
	}
}
