package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/chartpilot/chartpilot/catalog/index"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// DefaultServeAddress is where Serve listens unless told otherwise:
// loopback, on the port OLM's registry pods use.
const DefaultServeAddress = "127.0.0.1:50051"

// DefaultShutdownGrace is how long calls in flight may take to finish once
// a server is told to stop, unless told otherwise.
const DefaultShutdownGrace = 10 * time.Second

// ServeOptions configure a registry server for a catalog directory.
type ServeOptions struct {
	// Dir is the catalog directory to serve.
	Dir string
	// Image, instead of Dir, is a catalog image to pull (with the docker
	// credentials) and serve.
	Image string
	// Address is the host:port to listen on; default DefaultServeAddress.
	// Port 0 picks a free port (see Server.Addr).
	Address string
	// Log receives a line on the catalog's load (sizes and durations); nil
	// discards it.
	Log io.Writer
	// ShutdownGrace is how long calls in flight may take to finish once
	// Serve's context is done; then they are cut off. Default
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Procs, when above 0, is the process's GOMAXPROCS once Serve has
	// loaded the catalog, for a process whose work is serving it (chartpilot
	// catalog serve). Loading and indexing use every CPU; answers are
	// lookups of encoded messages, which one thread answers with the fewest
	// cross-thread wake-ups, most of a call's latency. NewServer ignores it.
	Procs int
}

// ProcsEnv is the environment variable with which a user sets GOMAXPROCS;
// the Go runtime has applied it before Serve runs.
const ProcsEnv = "GOMAXPROCS"

// ResolveProcs returns the ServeOptions.Procs to serve with: procs when the
// user gave it (explicit), else 0 (keep the runtime's) when the environment
// sets ProcsEnv, which is the user's choice too, else procs, the default.
// getenv is os.Getenv outside tests.
func ResolveProcs(procs int, explicit bool, getenv func(string) string) int {
	if !explicit && getenv(ProcsEnv) != "" {
		return 0
	}
	return procs
}

// Server serves OLM's registry gRPC API (api.Registry, the experimental
// api, grpc health and reflection) for one catalog directory, the way
// `opm serve` does, so that a CatalogSource with spec.address can use it.
// The answers come from an in-memory index (package catalog/index) built
// at start: nothing is written to disk but a pulled image.
type Server struct {
	grpc   *grpc.Server
	lis    net.Listener
	grace  time.Duration
	tmpDir string
	// Digest is the digest of the image served, when serving an image.
	Digest string
}

// NewServer loads and indexes the catalog, then listens. It does not serve
// until Serve is called; Close releases everything.
func NewServer(ctx context.Context, opts ServeOptions) (_ *Server, err error) {
	if (opts.Dir == "") == (opts.Image == "") {
		return nil, errors.New("set either a catalog directory or a catalog image")
	}
	s := &Server{grace: cmp.Or(opts.ShutdownGrace, DefaultShutdownGrace)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if opts.Image != "" {
		if s.tmpDir, err = os.MkdirTemp("", "chartpilot-catalog-serve-*"); err != nil {
			return nil, err
		}
		opts.Dir = filepath.Join(s.tmpDir, "configs")
		digest, err := PullImage(ctx, opts.Image, opts.Dir)
		if err != nil {
			return nil, err
		}
		s.Digest = digest.String()
	}
	if fi, err := os.Stat(opts.Dir); err != nil {
		return nil, fmt.Errorf("serving catalog: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("serving catalog: %s is not a directory", opts.Dir)
	}
	idx, err := loadIndex(ctx, opts.Dir, cmp.Or(opts.Log, io.Discard))
	if err != nil {
		return nil, err
	}
	// Loading leaves several times the index's size in garbage, which an
	// idle server would otherwise keep resident for minutes: collect it and
	// return it to the OS, beside the start rather than in its way.
	go debug.FreeOSMemory()
	var lc net.ListenConfig
	if s.lis, err = lc.Listen(ctx, "tcp", cmp.Or(opts.Address, DefaultServeAddress)); err != nil {
		return nil, fmt.Errorf("serving catalog: %w", err)
	}
	s.grpc = grpc.NewServer(
		grpc.ForceServerCodecV2(index.Codec()),
		// ListBundles sends the whole catalog (16 MiB for 5,000 inline
		// bundles): writes of up to a stream's 64 KiB quota at a time,
		// rather than gRPC's default 32 KiB, halve its write calls.
		grpc.WriteBufferSize(256<<10),
	)
	api.RegisterRegistryServer(s.grpc, idx)
	api.RegisterExperimentalRegistryServer(s.grpc, idx.Experimental())
	health.RegisterHealthServer(s.grpc, server.NewHealthServer())
	reflection.Register(s.grpc)
	return s, nil
}

// loadIndex is the one place the served catalog is read: it loads the
// directory and indexes it. index.New takes the declarative config over,
// so that only the index's answers stay in memory.
func loadIndex(ctx context.Context, dir string, log io.Writer) (*index.Index, error) {
	start := time.Now()
	cfg, err := LoadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	loaded := time.Now()
	packages, bundles := len(cfg.Packages), len(cfg.Bundles)
	if packages == 0 {
		// OLM would show a healthy catalog that resolves nothing: a wrong
		// directory or image is named here, where it happened.
		return nil, fmt.Errorf("serving catalog %s: %w: it holds no package", dir, ErrNoBundles)
	}
	idx, err := index.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("serving catalog %s: %w", dir, err)
	}
	fmt.Fprintf(log, "catalog %s: %d packages, %d bundles: loaded in %s, indexed in %s\n",
		dir, packages, bundles, loaded.Sub(start).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	return idx, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Serve answers requests until ctx is done or Close is called. Once ctx is
// done, calls in flight have ShutdownGrace to finish: a client that stops
// reading a ListBundles would otherwise hold a graceful stop forever.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		cut := time.AfterFunc(s.grace, s.grpc.Stop)
		defer cut.Stop()
		s.grpc.GracefulStop()
	})
	defer stop()
	err := s.grpc.Serve(s.lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Close stops serving and removes a pulled image.
func (s *Server) Close() error {
	if s.grpc != nil {
		s.grpc.Stop()
	} else if s.lis != nil {
		s.lis.Close()
	}
	if s.tmpDir != "" {
		return os.RemoveAll(s.tmpDir)
	}
	return nil
}

// Serve serves the catalog until ctx is done. ready, if not nil, is called
// with the listening address once the catalog is indexed and the port open:
// connections made from then on are answered.
func Serve(ctx context.Context, opts ServeOptions, ready func(addr string)) error {
	s, err := NewServer(ctx, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if opts.Procs > 0 {
		runtime.GOMAXPROCS(opts.Procs)
	}
	if ready != nil {
		ready(s.Addr())
	}
	return s.Serve(ctx)
}
