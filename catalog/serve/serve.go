package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/catalog/index"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/catalog/validate"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/server"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	health "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultAddress is where Serve listens unless told otherwise:
// loopback, on the port OLM's registry pods use.
const DefaultAddress = "127.0.0.1:50051"

// DefaultShutdownGrace is how long calls in flight may take to finish once
// a server is told to stop, unless told otherwise.
const DefaultShutdownGrace = 10 * time.Second

// Options configure a registry server for a catalog directory.
type Options struct {
	// Dir is the catalog directory to serve.
	Dir string
	// Image, instead of Dir, is a catalog image to pull (with the docker
	// credentials) and serve.
	Image string
	// Address is the host:port to listen on; default DefaultAddress.
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
	// HTTP, when set, also serves the catalog over catalogd's HTTP API
	// (package catalog/httpapi) as CatalogName, so that what OLM v1 reads
	// from a ClusterCatalog of this catalog can be read without a cluster.
	// Its Catalogs are set here; its Log defaults to Log.
	HTTP *httpapi.ServerOptions
	// CatalogName is the catalog's name in the HTTP API's URLs, as a
	// ClusterCatalog's; default DefaultCatalogName's.
	CatalogName string
	// NoGRPC leaves OLM's registry gRPC API out, to serve catalogd's API
	// alone (HTTP must be set): then the catalog is read as catalogd reads
	// it, without operator-registry's validation.
	NoGRPC bool
}

// ProcsEnv is the environment variable with which a user sets GOMAXPROCS;
// the Go runtime has applied it before Serve runs.
const ProcsEnv = "GOMAXPROCS"

// ResolveProcs returns the Options.Procs to serve with: procs when the
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
// `opm serve` does, so that a CatalogSource with spec.address can use it,
// and with Options.HTTP catalogd's HTTP API, as OLM v1 reads it.
// The answers come from memory (packages catalog/index and catalog/httpapi)
// filled at start: nothing is written to disk but a pulled image.
type Server struct {
	grpc   *grpc.Server
	lis    net.Listener
	http   *httpapi.Server
	grace  time.Duration
	tmpDir string
	// Digest is the digest of the image served, when serving an image.
	Digest string
	// CatalogName is the catalog's name in the HTTP API's URLs.
	CatalogName string
}

// NewServer loads and indexes the catalog, then listens. It does not serve
// until Serve is called; Close releases everything.
func NewServer(ctx context.Context, opts Options) (_ *Server, err error) {
	if (opts.Dir == "") == (opts.Image == "") {
		return nil, errors.New("set either a catalog directory or a catalog image")
	}
	if opts.NoGRPC && opts.HTTP == nil {
		return nil, errors.New("nothing to serve: neither the registry gRPC API nor the HTTP API")
	}
	s := &Server{grace: cmp.Or(opts.ShutdownGrace, DefaultShutdownGrace)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if opts.HTTP != nil {
		// A bad name is refused before an image is pulled.
		s.CatalogName = cmp.Or(opts.CatalogName, DefaultCatalogName(opts.Dir, opts.Image))
		if errs := validation.IsDNS1123Subdomain(s.CatalogName); len(errs) > 0 {
			return nil, fmt.Errorf("catalog name %q is not a ClusterCatalog name (%s): name the catalog", s.CatalogName, strings.Join(errs, "; "))
		}
	}
	if opts.Image != "" {
		if s.tmpDir, err = os.MkdirTemp("", "chartpilot-catalog-serve-*"); err != nil {
			return nil, err
		}
		opts.Dir = filepath.Join(s.tmpDir, "configs")
		digest, err := oci.PullImage(ctx, opts.Image, opts.Dir)
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
	log := cmp.Or(opts.Log, io.Discard)
	if !opts.NoGRPC {
		if err := s.listenGRPC(ctx, opts.Dir, cmp.Or(opts.Address, DefaultAddress), log); err != nil {
			return nil, err
		}
	}
	if opts.HTTP != nil {
		if err := s.listenHTTP(ctx, opts.Dir, *opts.HTTP, log); err != nil {
			return nil, err
		}
	}
	// Loading leaves several times the index's size in garbage, which an
	// idle server would otherwise keep resident for minutes: collect it and
	// return it to the OS, beside the start rather than in its way.
	go debug.FreeOSMemory()
	return s, nil
}

// listenGRPC indexes the catalog in dir for the registry gRPC API and
// listens on address.
func (s *Server) listenGRPC(ctx context.Context, dir, address string, log io.Writer) (err error) {
	idx, err := loadIndex(ctx, dir, log)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	if s.lis, err = lc.Listen(ctx, "tcp", address); err != nil {
		return fmt.Errorf("serving catalog: %w", err)
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
	return nil
}

// listenHTTP loads the catalog in dir as catalogd stores it and listens
// for its HTTP API.
func (s *Server) listenHTTP(ctx context.Context, dir string, opts httpapi.ServerOptions, log io.Writer) (err error) {
	start := time.Now()
	content, err := httpapi.Load(ctx, os.DirFS(dir))
	if err != nil {
		return fmt.Errorf("serving catalog %s over HTTP: %w", dir, err)
	}
	fmt.Fprintf(log, "catalog %s: %d metas, %d bytes as catalogd serves them: loaded in %s\n",
		dir, content.Len(), len(content.Bytes()), time.Since(start).Round(time.Millisecond))
	opts.Catalogs = map[string]*httpapi.Content{s.CatalogName: content}
	if opts.Log == nil && log != io.Discard {
		opts.Log = log
	}
	s.http, err = httpapi.NewServer(ctx, opts)
	return err
}

// DefaultCatalogName is the name a catalog is served under by default: the
// last element of its image's repository, or its directory's name.
func DefaultCatalogName(dir, image string) string {
	if image != "" {
		if ref, err := name.ParseReference(image); err == nil {
			return path.Base(ref.Context().RepositoryStr())
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// loadIndex is the one place the served catalog is read: it loads the
// directory and indexes it. index.New takes the declarative config over,
// so that only the index's answers stay in memory.
func loadIndex(ctx context.Context, dir string, log io.Writer) (*index.Index, error) {
	start := time.Now()
	cfg, err := fbc.LoadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	loaded := time.Now()
	packages, bundles := len(cfg.Packages), len(cfg.Bundles)
	if packages == 0 {
		// OLM would show a healthy catalog that resolves nothing: a wrong
		// directory or image is named here, where it happened.
		return nil, fmt.Errorf("serving catalog %s: %w: it holds no package", dir, validate.ErrNoBundles)
	}
	idx, err := index.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("serving catalog %s: %w", dir, err)
	}
	fmt.Fprintf(log, "catalog %s: %d packages, %d bundles: loaded in %s, indexed in %s\n",
		dir, packages, bundles, loaded.Sub(start).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	return idx, nil
}

// Addr is the address the registry gRPC API listens on; "" without it.
func (s *Server) Addr() string {
	if s.lis == nil {
		return ""
	}
	return s.lis.Addr().String()
}

// HTTP is the server of catalogd's HTTP API, nil without it.
func (s *Server) HTTP() *httpapi.Server { return s.http }

// Serve answers requests until ctx is done or Close is called. Once ctx is
// done, calls in flight have ShutdownGrace to finish: a client that stops
// reading a ListBundles would otherwise hold a graceful stop forever. A
// failure of one API stops the other.
func (s *Server) Serve(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if s.grpc != nil {
		g.Go(func() error { return s.serveGRPC(ctx) })
	}
	if s.http != nil {
		g.Go(func() error { return s.http.Serve(ctx) })
	}
	return g.Wait()
}

// serveGRPC answers the registry gRPC API.
func (s *Server) serveGRPC(ctx context.Context) error {
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
	var errs []error
	if s.http != nil {
		errs = append(errs, s.http.Close())
	}
	if s.tmpDir != "" {
		errs = append(errs, os.RemoveAll(s.tmpDir))
	}
	return errors.Join(errs...)
}

// Serve serves the catalog until ctx is done. ready, if not nil, is called
// with the server once the catalog is loaded and the ports open:
// connections made from then on are answered.
func Serve(ctx context.Context, opts Options, ready func(*Server)) error {
	s, err := NewServer(ctx, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if opts.Procs > 0 {
		runtime.GOMAXPROCS(opts.Procs)
	}
	if ready != nil {
		ready(s)
	}
	return s.Serve(ctx)
}
