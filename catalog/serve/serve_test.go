package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

// serveCatalog serves dir on a free loopback port and returns a connection.
func serveCatalog(t testing.TB, dir string) *grpc.ClientConn {
	t.Helper()
	s, err := NewServer(t.Context(), Options{Dir: dir, Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("listening on %s, want loopback", s.Addr())
	}
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// recvAll drains a server stream.
func recvAll[T any](t *testing.T, recv func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

// serveTestCatalog: package w (inline) with stable 1.0.0, 1.1.0, 2.0.0 and
// fast 2.0.0, deprecated 1.0.0; package img (image-based) with stable 1.0.0.
func serveTestCatalog(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: dir, Package: "w", Description: "test package"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ version, channels string }{{"1.0.0", "stable"}, {"1.1.0", "stable"}, {"2.0.0", "stable,fast"}} {
		bundle := catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: v.version, Channels: v.channels})
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: bundle}); err != nil {
			t.Fatal(err)
		}
	}
	if err := edit.Deprecate(t.Context(), edit.DeprecateOptions{Dir: dir, Package: "w", Bundle: "1.0.0", Message: "upgrade to 2.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: dir, Package: "img"}); err != nil {
		t.Fatal(err)
	}
	if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "img", Version: "1.0.0", Channels: "stable"}), Image: "registry.example.com/img-bundle:v1.0.0"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestServe(t *testing.T) {
	dir := serveTestCatalog(t)
	conn := serveCatalog(t, dir)
	client := api.NewRegistryClient(conn)
	ctx := t.Context()

	t.Run("health", func(t *testing.T) {
		resp, err := health.NewHealthClient(conn).Check(ctx, &health.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != health.HealthCheckResponse_SERVING {
			t.Errorf("status = %v", resp.Status)
		}
	})

	t.Run("ListPackages", func(t *testing.T) {
		stream, err := client.ListPackages(ctx, &api.ListPackageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range recvAll(t, stream.Recv) {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"img", "w"}) {
			t.Errorf("packages = %v", names)
		}
	})

	t.Run("GetPackage", func(t *testing.T) {
		p, err := client.GetPackage(ctx, &api.GetPackageRequest{Name: "w"})
		if err != nil {
			t.Fatal(err)
		}
		var chans []string
		for _, c := range p.Channels {
			chans = append(chans, c.Name+"->"+c.CsvName)
		}
		slices.Sort(chans)
		if p.DefaultChannelName != "stable" || !slices.Equal(chans, []string{"fast->w.v2.0.0", "stable->w.v2.0.0"}) {
			t.Errorf("package = default %q channels %v", p.DefaultChannelName, chans)
		}
	})

	// bundleTests cover the unary calls that return a bundle.
	bundleTests := []struct {
		name string
		call func() (*api.Bundle, error)
		// want* are the expected fields
		wantName, wantChannel, wantVersion, wantImage string
		// wantObjects is the number of inline manifests served.
		wantObjects int
		wantDepr    string
	}{
		{
			name: "GetBundleForChannel is the head",
			call: func() (*api.Bundle, error) {
				return client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: "w", ChannelName: "stable"})
			},
			wantName: "w.v2.0.0", wantChannel: "stable", wantVersion: "2.0.0", wantObjects: 2,
		},
		{
			name: "GetBundle by name, deprecated",
			call: func() (*api.Bundle, error) {
				return client.GetBundle(ctx, &api.GetBundleRequest{PkgName: "w", ChannelName: "stable", CsvName: "w.v1.0.0"})
			},
			wantName: "w.v1.0.0", wantChannel: "stable", wantVersion: "1.0.0", wantObjects: 2, wantDepr: "upgrade to 2.0.0",
		},
		{
			name: "GetBundleThatReplaces",
			call: func() (*api.Bundle, error) {
				return client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{CsvName: "w.v1.1.0", PkgName: "w", ChannelName: "stable"})
			},
			wantName: "w.v2.0.0", wantChannel: "stable", wantVersion: "2.0.0", wantObjects: 2,
		},
		{
			name: "GetDefaultBundleThatProvides",
			call: func() (*api.Bundle, error) {
				return client.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: "img.example.com", Version: "v1", Kind: "Widget"})
			},
			wantName: "img.v1.0.0", wantChannel: "stable", wantVersion: "1.0.0", wantImage: "registry.example.com/img-bundle:v1.0.0", wantObjects: 1,
		},
	}
	for _, tt := range bundleTests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if b.CsvName != tt.wantName || b.ChannelName != tt.wantChannel || b.Version != tt.wantVersion || b.BundlePath != tt.wantImage {
				t.Errorf("bundle = %s in %s version %s image %q", b.CsvName, b.ChannelName, b.Version, b.BundlePath)
			}
			if len(b.Object) != tt.wantObjects {
				t.Errorf("%d objects, want %d", len(b.Object), tt.wantObjects)
			}
			if !strings.Contains(b.CsvJson, `"name":"`+tt.wantName+`"`) {
				t.Errorf("csvJson does not name %s: %.200s", tt.wantName, b.CsvJson)
			}
			var apis []string
			for _, g := range b.ProvidedApis {
				apis = append(apis, g.Group+"/"+g.Version+"/"+g.Kind)
			}
			pkg := strings.SplitN(tt.wantName, ".", 2)[0]
			if !slices.Contains(apis, pkg+".example.com/v1/Widget") {
				t.Errorf("provided apis = %v", apis)
			}
			gotDepr := ""
			if b.Deprecation != nil {
				gotDepr = b.Deprecation.Message
			}
			if gotDepr != tt.wantDepr {
				t.Errorf("deprecation = %q, want %q", gotDepr, tt.wantDepr)
			}
		})
	}

	t.Run("ListBundles", func(t *testing.T) {
		stream, err := client.ListBundles(ctx, &api.ListBundlesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range recvAll(t, stream.Recv) {
			got = append(got, fmt.Sprintf("%s/%s/%s replaces=%s skipRange=%s", b.PackageName, b.ChannelName, b.CsvName, b.Replaces, b.SkipRange))
		}
		slices.Sort(got)
		want := []string{
			"img/stable/img.v1.0.0 replaces= skipRange=",
			"w/fast/w.v2.0.0 replaces= skipRange=",
			"w/stable/w.v1.0.0 replaces= skipRange=",
			"w/stable/w.v1.1.0 replaces=w.v1.0.0 skipRange=>=1.0.0 <1.1.0",
			"w/stable/w.v2.0.0 replaces=w.v1.1.0 skipRange=>=1.0.0 <2.0.0",
		}
		if !slices.Equal(got, want) {
			t.Errorf("bundles:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("GetChannelEntriesThatReplace", func(t *testing.T) {
		stream, err := client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "w.v1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range recvAll(t, stream.Recv) {
			got = append(got, e.PackageName+"/"+e.ChannelName+"/"+e.BundleName+" replaces "+e.Replaces)
		}
		if want := []string{"w/stable/w.v1.1.0 replaces w.v1.0.0"}; !slices.Equal(got, want) {
			t.Errorf("entries = %v, want %v", got, want)
		}
	})

	t.Run("GetLatestChannelEntriesThatProvide", func(t *testing.T) {
		stream, err := client.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: "w.example.com", Version: "v1alpha1", Kind: "Widget"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range recvAll(t, stream.Recv) {
			got = append(got, e.ChannelName+"/"+e.BundleName)
		}
		slices.Sort(got)
		if want := []string{"fast/w.v2.0.0", "stable/w.v2.0.0"}; !slices.Equal(got, want) {
			t.Errorf("entries = %v, want %v", got, want)
		}
	})

	t.Run("unknown package is an error", func(t *testing.T) {
		_, err := client.GetPackage(ctx, &api.GetPackageRequest{Name: "nope"})
		if err == nil || !strings.Contains(err.Error(), `package "nope" not found`) {
			t.Errorf("error = %v", err)
		}
	})
}

// A catalog that holds nothing (a wrong directory, an image without its
// configs) is refused at start rather than served empty.
func TestServeRefusesAnEmptyCatalog(t *testing.T) {
	dir := t.TempDir()
	_, err := NewServer(t.Context(), Options{Dir: dir, Address: "127.0.0.1:0"})
	if !errors.Is(err, validate.ErrNoBundles) || !strings.Contains(err.Error(), "serving catalog "+dir) {
		t.Fatalf("error = %v", err)
	}
}

func TestServeRefusesAnInvalidCatalog(t *testing.T) {
	dir := catalogtest.WriteCatalog(t, catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0"}))
	_, err := NewServer(t.Context(), Options{Dir: dir, Address: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), `not found in any channel entries`) {
		t.Fatalf("error = %v", err)
	}
}

// Every ListBundles sends the same pre-encoded buffers: clients listing at
// once, on connections of their own, each get every bundle whole.
func TestServeConcurrentListBundles(t *testing.T) {
	conn := serveCatalog(t, serveTestCatalog(t))
	list := func(ctx context.Context, c api.RegistryClient) ([]*api.Bundle, error) {
		stream, err := c.ListBundles(ctx, &api.ListBundlesRequest{})
		if err != nil {
			return nil, err
		}
		var out []*api.Bundle
		for {
			b, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return out, nil
			} else if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	want, err := list(t.Context(), api.NewRegistryClient(conn))
	if err != nil || len(want) != 5 {
		t.Fatalf("ListBundles: %d bundles, %v", len(want), err)
	}
	g, ctx := errgroup.WithContext(t.Context())
	for range 8 {
		c, err := grpc.NewClient(conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		g.Go(func() error {
			for range 20 {
				got, err := list(ctx, api.NewRegistryClient(c))
				if err != nil {
					return err
				}
				if !slices.EqualFunc(got, want, func(a, b *api.Bundle) bool { return proto.Equal(a, b) }) {
					return fmt.Errorf("a concurrent ListBundles answered %d bundles unlike the first's %d", len(got), len(want))
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading in the middle of a ListBundles does not hold
// the server's stop: after ShutdownGrace, its call is cut off.
func TestServeStopsDespiteAStalledClient(t *testing.T) {
	dir := t.TempDir()
	catalogtest.GenerateCatalog(t, dir, 8, 25) // about 0.7 MiB of ListBundles, ten windows
	s, err := NewServer(t.Context(), Options{Dir: dir, Address: "127.0.0.1:0", ShutdownGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer s.Close()

	// A fixed 64 KiB window: the server can send no more than that until
	// the client reads.
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := api.NewRegistryClient(conn).ListBundles(t.Context(), &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("stopped after %s, before the grace ended: was the call ever stalled?", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop 30s after its context was done")
	}
}

// Serve sets GOMAXPROCS to Procs once the catalog is loaded, before it says
// it is ready; Procs 0 leaves it.
func TestServeProcs(t *testing.T) {
	dir := serveTestCatalog(t)
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	for _, tt := range []struct{ procs, want int }{{procs: 1, want: 1}, {procs: 0, want: before + 1}, {procs: 3, want: 3}} {
		runtime.GOMAXPROCS(before + 1)
		ctx, cancel := context.WithCancel(t.Context())
		got := 0
		err := Serve(ctx, Options{Dir: dir, Address: "127.0.0.1:0", Procs: tt.procs}, func(*Server) {
			got = runtime.GOMAXPROCS(0)
			cancel()
		})
		if err != nil {
			t.Fatalf("Procs %d: %v", tt.procs, err)
		}
		if got != tt.want {
			t.Errorf("Procs %d: GOMAXPROCS %d when ready, want %d", tt.procs, got, tt.want)
		}
	}
}

// GOMAXPROCS in the environment is the user's choice unless the procs
// flag is given too; neither leaves the default.
func TestResolveProcs(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == ProcsEnv {
				return v
			}
			return ""
		}
	}
	for _, tt := range []struct {
		name     string
		procs    int
		explicit bool
		env      string
		want     int
	}{
		{name: "the default", procs: 1, want: 1},
		{name: "the environment's", procs: 1, env: "4", want: 0},
		{name: "the flag's over the environment's", procs: 2, explicit: true, env: "4", want: 2},
		{name: "the flag's", procs: 3, explicit: true, want: 3},
		{name: "the flag's 0 keeps the runtime's", procs: 0, explicit: true, want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolveProcs(tt.procs, tt.explicit, env(tt.env)); got != tt.want {
				t.Errorf("ResolveProcs(%d, %t, GOMAXPROCS=%q) = %d, want %d", tt.procs, tt.explicit, tt.env, got, tt.want)
			}
		})
	}
}
