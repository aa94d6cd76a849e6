package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/index"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// BenchmarkServeStartToHealthy measures from NewServer (cache build from
// the directory) to the first SERVING health answer over gRPC.
func BenchmarkServeStartToHealthy(b *testing.B) {
	dir := catalogtest.BenchCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewServer(b.Context(), Options{Dir: dir, Address: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve(context.Background()) }()
		conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := health.NewHealthClient(conn).Check(b.Context(), &health.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err != nil || resp.Status != health.HealthCheckResponse_SERVING {
			b.Fatalf("health: %v %v", resp, err)
		}
		conn.Close()
		s.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// benchServer serves the generated catalog for the query benchmarks.
func benchServer(b *testing.B) api.RegistryClient {
	dir := catalogtest.BenchCatalog(b)
	s, err := NewServer(b.Context(), Options{Dir: dir, Address: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(context.Background())
	b.Cleanup(func() { s.Close() })
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return api.NewRegistryClient(conn)
}

func BenchmarkListBundles(b *testing.B) {
	client := benchServer(b)
	b.ReportAllocs()
	for b.Loop() {
		stream, err := client.ListBundles(b.Context(), &api.ListBundlesRequest{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != catalogtest.BenchPackages*catalogtest.BenchBundles {
			b.Fatalf("%d bundles, want %d", n, catalogtest.BenchPackages*catalogtest.BenchBundles)
		}
	}
}

func BenchmarkGetBundleForChannel(b *testing.B) {
	client := benchServer(b)
	b.ReportAllocs()
	benchGetBundleForChannel(b, client)
}

// BenchmarkIndex measures building the serving index of the loaded
// catalog, the part of a server's start that is not reading the files, and
// reports the memory the index holds once built.
func BenchmarkIndex(b *testing.B) {
	cfg, err := fbc.LoadDir(b.Context(), catalogtest.BenchCatalog(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var idx *index.Index
	for b.Loop() {
		// New empties the config it is given, not its slices.
		c := *cfg
		if idx, err = index.New(&c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// The index shares the manifests' strings with the config: measure it
	// alone, as a server holds it.
	cfg = nil
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(idx)
	idx = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(with.HeapAlloc-without.HeapAlloc)/(1<<20), "index-MiB")
}

// BenchmarkAnswerGetBundleForChannel measures a server's own work for one
// GetBundleForChannel, without the gRPC round trip (which costs both tools
// the same and, on a loaded machine, most of a call): finding the answer
// and encoding it. "opm" is operator-registry's pkg/server over its
// pkg/cache, as `opm serve` answers; "chartpilot" is the index.
func BenchmarkAnswerGetBundleForChannel(b *testing.B) {
	dir := catalogtest.BenchCatalog(b)
	cfg, err := fbc.LoadDir(b.Context(), dir)
	if err != nil {
		b.Fatal(err)
	}
	idx, err := index.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	store, err := cache.New(filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if err := cache.LoadOrRebuild(b.Context(), store, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	servers := []struct {
		name string
		srv  api.RegistryServer
	}{{"chartpilot", idx}, {"opm", server.NewRegistryServer(store)}}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				pkg := fmt.Sprintf("operator-%03d", i%catalogtest.BenchPackages)
				i++
				bundle, err := s.srv.GetBundleForChannel(b.Context(), &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: "stable"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(bundle); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
