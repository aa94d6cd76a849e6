package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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

// TestServeAnswersEqualOpmServe serves one catalog (inline and image-based
// bundles, two channels, a replaces chain with skips, a deprecation) with
// chartpilot and with `opm serve` of operator-registry v1.73.0, built from
// tools/peers/opm, and requires the same answers (messages, or gRPC code and
// message) to every api.Registry method and to grpc health.
func TestServeAnswersEqualOpmServe(t *testing.T) {
	dir := serveTestCatalog(t)
	if _, err := Add(AddOptions{Dir: dir, BundleDir: writeBundle(t, bundleSpec{pkg: "w", version: "2.0.1", channels: "stable,fast"})}); err != nil {
		t.Fatal(err)
	}
	opmAddr := startOpmServe(t, dir)
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
}
