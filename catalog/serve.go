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

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// DefaultServeAddress is where Serve listens unless told otherwise:
// loopback, on the port OLM's registry pods use.
const DefaultServeAddress = "127.0.0.1:50051"

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
	// CacheDir keeps operator-registry's serving cache between runs; it is
	// rebuilt when the catalog changed. Empty means a temporary directory
	// removed by Close.
	CacheDir string
	// Log receives operator-registry's log lines; nil discards them.
	Log io.Writer
}

// Server serves OLM's registry gRPC API (api.Registry, the experimental
// api, grpc health and reflection) for one catalog directory, the way
// `opm serve` does, so that a CatalogSource with spec.address can use it.
type Server struct {
	grpc   *grpc.Server
	lis    net.Listener
	store  cache.Cache
	tmpDir string
	// Digest is the digest of the image served, when serving an image.
	Digest string
}

// NewServer loads (or builds) the serving cache of the catalog and listens.
// It does not serve until Serve is called; Close releases everything.
func NewServer(ctx context.Context, opts ServeOptions) (_ *Server, err error) {
	if (opts.Dir == "") == (opts.Image == "") {
		return nil, errors.New("set either a catalog directory or a catalog image")
	}
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.tmpDir, err = os.MkdirTemp("", "chartpilot-catalog-serve-*"); err != nil {
		return nil, err
	}
	if opts.Image != "" {
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
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	if opts.Log != nil {
		logger.SetOutput(opts.Log)
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(s.tmpDir, "cache")
	}
	if s.store, err = cache.New(cacheDir, cache.WithLog(logrus.NewEntry(logger))); err != nil {
		return nil, fmt.Errorf("opening serving cache %s: %w", cacheDir, err)
	}
	if err := cache.LoadOrRebuild(ctx, s.store, os.DirFS(opts.Dir)); err != nil {
		return nil, fmt.Errorf("serving catalog %s: %w", opts.Dir, err)
	}
	var lc net.ListenConfig
	if s.lis, err = lc.Listen(ctx, "tcp", cmp.Or(opts.Address, DefaultServeAddress)); err != nil {
		return nil, fmt.Errorf("serving catalog: %w", err)
	}
	s.grpc = grpc.NewServer()
	api.RegisterRegistryServer(s.grpc, server.NewRegistryServer(s.store))
	api.RegisterExperimentalRegistryServer(s.grpc, server.NewExperimentalRegistryServer(s.store))
	health.RegisterHealthServer(s.grpc, server.NewHealthServer())
	reflection.Register(s.grpc)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Serve answers requests until ctx is done or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.grpc.GracefulStop)
	defer stop()
	err := s.grpc.Serve(s.lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Close stops serving and releases the cache.
func (s *Server) Close() error {
	if s.grpc != nil {
		s.grpc.Stop()
	} else if s.lis != nil {
		s.lis.Close()
	}
	var err error
	if s.store != nil {
		err = s.store.Close()
	}
	if s.tmpDir != "" {
		err = errors.Join(err, os.RemoveAll(s.tmpDir))
	}
	return err
}

// Serve serves the catalog until ctx is done. ready, if not nil, is called
// with the listening address once the cache is loaded and the port open:
// connections made from then on are answered.
func Serve(ctx context.Context, opts ServeOptions, ready func(addr string)) error {
	s, err := NewServer(ctx, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if ready != nil {
		ready(s.Addr())
	}
	return s.Serve(ctx)
}
