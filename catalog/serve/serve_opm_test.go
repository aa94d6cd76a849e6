package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// rpc is one registry call made to both servers.
type rpc struct {
	name string
	call func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error)
}

func unary[T proto.Message](f func() (T, error)) ([]proto.Message, error) {
	m, err := f()
	if err != nil {
		return nil, err
	}
	return []proto.Message{m}, nil
}

// stream drains a server stream; the answers are sorted, as neither server
// promises an order.
func stream[T proto.Message](s interface{ Recv() (T, error) }, err error) ([]proto.Message, error) {
	if err != nil {
		return nil, err
	}
	var out []proto.Message
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	key := func(m proto.Message) []byte {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		return b
	}
	slices.SortFunc(out, func(a, b proto.Message) int { return bytes.Compare(key(a), key(b)) })
	return out, nil
}

// registryCalls are every api.Registry method, with requests derived from
// the catalog's bundles (every package, channel, bundle, replaced bundle and
// provided API) plus requests for what does not exist.
func registryCalls(bundles []*api.Bundle) []rpc {
	calls := []rpc{
		{"ListPackages", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return stream(c.ListPackages(ctx, &api.ListPackageRequest{}))
		}},
		{"ListBundles", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return stream(c.ListBundles(ctx, &api.ListBundlesRequest{}))
		}},
		{"GetPackage missing", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return unary(func() (*api.Package, error) { return c.GetPackage(ctx, &api.GetPackageRequest{Name: "missing"}) })
		}},
		{"GetBundleForChannel missing channel", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return unary(func() (*api.Bundle, error) {
				return c.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: bundles[0].PackageName, ChannelName: "missing"})
			})
		}},
		{"GetBundle missing", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return unary(func() (*api.Bundle, error) {
				return c.GetBundle(ctx, &api.GetBundleRequest{PkgName: bundles[0].PackageName, ChannelName: bundles[0].ChannelName, CsvName: "missing.v0.0.0"})
			})
		}},
		{"GetChannelEntriesThatProvide missing", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return stream(c.GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: "missing.example.com", Version: "v1", Kind: "Nothing"}))
		}},
		{"GetDefaultBundleThatProvides missing", func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
			return unary(func() (*api.Bundle, error) {
				return c.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: "missing.example.com", Version: "v1", Kind: "Nothing"})
			})
		}},
	}
	seenPkg, seenChan, seenGVK := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, b := range bundles {
		if !seenPkg[b.PackageName] {
			seenPkg[b.PackageName] = true
			calls = append(calls, rpc{"GetPackage " + b.PackageName, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
				return unary(func() (*api.Package, error) { return c.GetPackage(ctx, &api.GetPackageRequest{Name: b.PackageName}) })
			}})
		}
		if ch := b.PackageName + "/" + b.ChannelName; !seenChan[ch] {
			seenChan[ch] = true
			calls = append(calls, rpc{"GetBundleForChannel " + ch, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
				return unary(func() (*api.Bundle, error) {
					return c.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: b.PackageName, ChannelName: b.ChannelName})
				})
			}})
		}
		where := b.PackageName + "/" + b.ChannelName + "/" + b.CsvName
		calls = append(calls,
			rpc{"GetBundle " + where, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
				return unary(func() (*api.Bundle, error) {
					return c.GetBundle(ctx, &api.GetBundleRequest{PkgName: b.PackageName, ChannelName: b.ChannelName, CsvName: b.CsvName})
				})
			}},
			rpc{"GetChannelEntriesThatReplace " + b.CsvName, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
				return stream(c.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: b.CsvName}))
			}},
			// The bundle that replaces this one (or NotFound for a head).
			rpc{"GetBundleThatReplaces " + where, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
				return unary(func() (*api.Bundle, error) {
					return c.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{CsvName: b.CsvName, PkgName: b.PackageName, ChannelName: b.ChannelName})
				})
			}},
		)
		for _, gvk := range b.ProvidedApis {
			key := gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
			if seenGVK[key] {
				continue
			}
			seenGVK[key] = true
			calls = append(calls,
				rpc{"GetChannelEntriesThatProvide " + key, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
					return stream(c.GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Plural: gvk.Plural}))
				}},
				rpc{"GetLatestChannelEntriesThatProvide " + key, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
					return stream(c.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Plural: gvk.Plural}))
				}},
				rpc{"GetDefaultBundleThatProvides " + key, func(ctx context.Context, c api.RegistryClient) ([]proto.Message, error) {
					return unary(func() (*api.Bundle, error) {
						return c.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Plural: gvk.Plural})
					})
				}},
			)
		}
	}
	return calls
}

// TestServeAnswersEqualOpmServe serves catalogs with chartpilot and with
// `opm serve` of operator-registry v1.73.0, the local cluster's opm, and
// requires the same answers (messages, or gRPC code and message) to every
// api.Registry method, to the experimental custom schema call and to grpc
// health. "added" is what `catalog add` makes (inline and image-based
// bundles, two channels, a semver replaces chain with skipRanges, a
// deprecated bundle); "graph" has what `catalog add` does not make (see
// graphTestCatalog).
func TestServeAnswersEqualOpmServe(t *testing.T) {
	catalogs := []struct {
		name string
		dir  func(t *testing.T) string
		// customSchemas: the catalog has custom schema blobs.
		customSchemas bool
	}{{
		name: "added",
		dir: func(t *testing.T) string {
			dir := serveTestCatalog(t)
			if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "2.0.1", Channels: "stable,fast"})}); err != nil {
				t.Fatal(err)
			}
			return dir
		},
	}, {
		name:          "graph",
		dir:           graphTestCatalog,
		customSchemas: true,
	}}
	for _, c := range catalogs {
		t.Run(c.name, func(t *testing.T) {
			if n := compareWithOpm(t, c.dir(t)); c.customSchemas && n == 0 {
				t.Error("no custom schema blob compared")
			}
		})
	}
}

// compareWithOpm serves dir with chartpilot and with opm and compares the
// answers of every api.Registry call, and of the experimental custom
// schema call. It returns how many custom schema blobs were compared.
func compareWithOpm(t *testing.T, dir string) int {
	opmAddr := startOpmServe(t, opmBinary(t), dir)
	ours := serveCatalog(t, dir)
	theirs, err := grpc.NewClient(opmAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { theirs.Close() })
	ctx := t.Context()
	for _, conn := range []*grpc.ClientConn{ours, theirs} {
		resp, err := health.NewHealthClient(conn).Check(ctx, &health.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err != nil || resp.Status != health.HealthCheckResponse_SERVING {
			t.Fatalf("health of %s: %v %v", conn.Target(), resp, err)
		}
	}
	ourClient, opmClient := api.NewRegistryClient(ours), api.NewRegistryClient(theirs)

	listed, err := stream(opmClient.ListBundles(ctx, &api.ListBundlesRequest{}))
	if err != nil || len(listed) == 0 {
		t.Fatalf("opm ListBundles: %d bundles, %v", len(listed), err)
	}
	var bundles []*api.Bundle
	for _, m := range listed {
		bundles = append(bundles, m.(*api.Bundle))
	}
	calls := registryCalls(bundles)
	methods := map[string]bool{}
	answered := 0
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			want, wantErr := c.call(ctx, opmClient)
			got, gotErr := c.call(ctx, ourClient)
			if ws, gs := status.Convert(wantErr), status.Convert(gotErr); ws.Code() != gs.Code() || ws.Message() != gs.Message() {
				t.Fatalf("error = %v, opm's = %v", gotErr, wantErr)
			}
			if wantErr == nil && len(want) > 0 {
				answered++
			}
			if len(got) != len(want) {
				t.Fatalf("%d answers, opm gave %d", len(got), len(want))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("answer %d differs from opm's:\nchartpilot: %s\nopm:        %s", i, protojson.Format(got[i]), protojson.Format(want[i]))
				}
			}
		})
		name, _, _ := strings.Cut(c.name, " ")
		methods[name] = true
	}
	// Every method of the service is covered.
	ms := api.File_registry_proto.Services().ByName("Registry").Methods()
	for i := range ms.Len() {
		if m := ms.Get(i); !methods[string(m.Name())] {
			t.Errorf("api.Registry/%s is not compared", m.Name())
		}
	}
	// Most calls find something: the comparison is not one of two NotFounds.
	if answered < len(calls)*2/3 {
		t.Errorf("only %d of %d calls answered with content", answered, len(calls))
	}
	t.Logf("compared %d calls (%d with content) on %d bundles", len(calls), answered, len(bundles))
	return compareCustomSchemas(t, ours, theirs)
}

// compareCustomSchemas compares the experimental custom schema call: blobs
// of a package, outside any package, none, refused queries, and a call
// without the acknowledging header. It returns how many blobs opm sent.
func compareCustomSchemas(t *testing.T, ours, theirs *grpc.ClientConn) int {
	blobs := 0
	ctx := t.Context()
	ack := metadata.AppendToOutgoingContext(ctx, "x-acknowledge-experimental", "true")
	queries := []struct {
		ctx          context.Context
		schema, pkg  string
		acknowledged bool
	}{
		{ack, "example.widget", "prom", true},
		{ack, "example.global", "", true},
		{ack, "example.widget", "etcd", true},
		{ack, "olm.bundle", "prom", true},
		{ack, "", "prom", true},
		{ack, "example.widget", "../prom", true},
		{ctx, "example.widget", "prom", false},
	}
	for _, q := range queries {
		t.Run(fmt.Sprintf("ExperimentalListPackageCustomSchemas %s/%s acknowledged=%t", q.schema, q.pkg, q.acknowledged), func(t *testing.T) {
			call := func(conn *grpc.ClientConn) ([]proto.Message, error) {
				return stream(api.NewExperimentalRegistryClient(conn).ExperimentalListPackageCustomSchemas(q.ctx,
					&api.ExperimentalListPackageCustomSchemasRequest{Schema: q.schema, PackageName: q.pkg}))
			}
			want, wantErr := call(theirs)
			got, gotErr := call(ours)
			blobs += len(want)
			if ws, gs := status.Convert(wantErr), status.Convert(gotErr); ws.Code() != gs.Code() || ws.Message() != gs.Message() {
				t.Fatalf("error = %v, opm's = %v", gotErr, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("%d answers, opm gave %d", len(got), len(want))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("answer %d differs from opm's:\nchartpilot: %s\nopm:        %s", i, protojson.Format(got[i]), protojson.Format(want[i]))
				}
			}
		})
	}
	return blobs
}

// graphTestCatalog is a catalog of the shapes `catalog add` does not make,
// with one answer to each call (opm picks among several bundles that
// replace one at random):
//   - etcd, image-based, described by olm.csv.metadata, with an icon:
//     stable v1 <- v2 <- v3 where v3 also skips v2a (in the channel, replaced
//     by nothing) and v0 (in no channel), with a skipRange; fast v3 <- v4, a
//     newer head than the default channel's; the package, channel fast and
//     bundle v1 deprecated; v4 provides EtcdBackup (twice) besides
//     EtcdCluster;
//   - prom, inline: beta p1 <- p2 (p2 also skips p1), p2 requiring
//     EtcdCluster and package etcd and providing EtcdCluster;
//   - zeta, inline: default channel a (z1), channel b (z2) the only provider
//     of Zeta, which no default channel provides;
//   - custom schema blobs in prom and outside any package.
func graphTestCatalog(t *testing.T) string {
	etcdCluster := property.MustBuildGVK("etcd.example.com", "v1", "EtcdCluster")
	etcdBackup := property.MustBuildGVK("etcd.example.com", "v1", "EtcdBackup")
	zeta := property.MustBuildGVK("zeta.example.com", "v1", "Zeta")
	inline := func(pkg, name, version string, props ...property.Property) declcfg.Bundle {
		csv := fmt.Sprintf(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":%q},"spec":{"version":%q}}`, name, version)
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: name, Properties: append([]property.Property{
			property.MustBuildPackage(pkg, version), property.MustBuildBundleObject([]byte(csv)), property.MustBuildBundleObject([]byte(cm)),
		}, props...)}
	}
	versions := []string{"1.0.0", "2.0.0", "2.1.0", "3.0.0", "4.0.0"}
	etcd := catalogtest.Package("etcd", "stable", versions,
		declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
			catalogtest.Entry("etcd.v1.0.0", "", ""), catalogtest.Entry("etcd.v2.0.0", "etcd.v1.0.0", ""), catalogtest.Entry("etcd.v2.1.0", "", ""),
			catalogtest.Entry("etcd.v3.0.0", "etcd.v2.0.0", "<3.0.0", "etcd.v2.1.0", "etcd.v0.9.0"),
		}},
		declcfg.Channel{Name: "fast", Entries: []declcfg.ChannelEntry{catalogtest.Entry("etcd.v3.0.0", "", ""), catalogtest.Entry("etcd.v4.0.0", "etcd.v3.0.0", "")}})
	etcd.Packages[0].Description = "A key-value store."
	etcd.Packages[0].Icon = &declcfg.Icon{Data: []byte("<svg/>"), MediaType: "image/svg+xml"}
	for i := range etcd.Bundles {
		b := &etcd.Bundles[i]
		b.Properties = append(b.Properties, etcdCluster, property.MustBuildCSVMetadata(v1alpha1.ClusterServiceVersion{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"capabilities": "Basic Install"}},
			Spec:       v1alpha1.ClusterServiceVersionSpec{DisplayName: "etcd"},
		}))
		if b.Name == "etcd.v4.0.0" {
			b.Properties = append(b.Properties, etcdBackup, etcdBackup)
		}
	}
	etcd.Deprecations = []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: "etcd", Entries: []declcfg.DeprecationEntry{
		{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "etcd is retired"},
		{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: "fast"}, Message: "fast is frozen"},
		{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: "etcd.v1.0.0"}, Message: "v1 is broken"},
	}}}
	prom := declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "prom", DefaultChannel: "beta"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "prom", Name: "beta", Entries: []declcfg.ChannelEntry{
			catalogtest.Entry("prom.v1.0.0", "", ""), catalogtest.Entry("prom.v2.0.0", "prom.v1.0.0", "", "prom.v1.0.0"),
		}}},
		Bundles: []declcfg.Bundle{
			inline("prom", "prom.v1.0.0", "1.0.0", etcdCluster),
			inline("prom", "prom.v2.0.0", "2.0.0", etcdCluster,
				property.MustBuildGVKRequired("etcd.example.com", "v1", "EtcdCluster"),
				property.MustBuildPackageRequired("etcd", ">=1.0.0")),
		},
		Others: []declcfg.Meta{
			{Schema: "example.widget", Package: "prom", Name: "w1", Blob: json.RawMessage(`{"schema":"example.widget","package":"prom","name":"w1","size":1}`)},
			{Schema: "example.widget", Package: "prom", Name: "w2", Blob: json.RawMessage(`{"schema":"example.widget","package":"prom","name":"w2","tags":["a","b"]}`)},
		},
	}
	zetaPkg := declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "zeta", DefaultChannel: "a"}},
		Channels: []declcfg.Channel{
			{Schema: declcfg.SchemaChannel, Package: "zeta", Name: "a", Entries: []declcfg.ChannelEntry{catalogtest.Entry("zeta.v1.0.0", "", "")}},
			{Schema: declcfg.SchemaChannel, Package: "zeta", Name: "b", Entries: []declcfg.ChannelEntry{catalogtest.Entry("zeta.v2.0.0", "", "")}},
		},
		Bundles: []declcfg.Bundle{inline("zeta", "zeta.v1.0.0", "1.0.0"), inline("zeta", "zeta.v2.0.0", "2.0.0", zeta)},
		Others: []declcfg.Meta{
			{Schema: "example.global", Name: "g", Blob: json.RawMessage(`{"schema":"example.global","name":"g"}`)},
		},
	}
	return catalogtest.WriteCatalog(t, etcd, prom, zetaPkg)
}

var (
	opmOnce sync.Once
	opmPath string
	opmErr  error
)

// opmBinary returns opm (operator-registry v1.73.0) as the local cluster
// builds it, one of its components (make test builds them before the
// tests); CHARTPILOT_OPM names another opm instead.
func opmBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHARTPILOT_OPM"); p != "" {
		return p
	}
	opmOnce.Do(func() {
		var inst *toolchain.Installation
		inst, opmErr = toolchain.Ensure(context.Background(), toolchain.Options{Out: os.Stderr, Only: []string{"opm"}})
		if opmErr == nil {
			opmPath = inst.Binary("opm")
		}
	})
	if opmErr != nil {
		t.Fatalf("building opm: %v", opmErr)
	}
	return opmPath
}
