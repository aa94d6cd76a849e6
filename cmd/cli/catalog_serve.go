package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/catalog/serve"
	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// serveOptions are catalog serve's flags and arguments.
type serveOptions struct {
	serve.Options
	f       *catalogFlags
	streams genericiooptions.IOStreams
	port    int
	verbose bool
	// grpc serves the registry gRPC API; http, when set, is the address of
	// catalogd's HTTP API, served as https unless plainHTTP, with metas.
	grpc              bool
	http              string
	plainHTTP, metas  bool
	tlsCert, tlsKey   string
	httpOnlyFlagsUsed []string
}

func newCatalogServeCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &serveOptions{Options: serve.Options{Address: serve.DefaultAddress}, f: f, streams: streams, grpc: true, metas: true}
	cmd := &cobra.Command{
		Use:   "serve [DIR|IMAGE]",
		Short: "Serve OLM's registry gRPC API, and catalogd's HTTP API (OLM v1), for a catalog directory or image (on loopback by default)",
		Long: `Serves the catalog the way ` + "`opm serve`" + ` does: api.Registry, grpc health and
reflection. Point a CatalogSource with spec.sourceType grpc and spec.address
HOST:PORT at it. An argument that is not a directory is taken as a catalog
image, pulled with the docker credentials. Stop with Ctrl-C.

With --http, it also answers the HTTP API catalogd (OLM v1) serves each
ClusterCatalog's content on, with the same URL layout, bodies and headers:
/catalogs/NAME/api/v1/all (the catalog as JSON Lines) and
/catalogs/NAME/api/v1/metas?schema=&package=&name= (the metas they select),
over HTTPS with a certificate generated at start (its file is printed, for
curl --cacert) or given with --tls-cert and --tls-key, or over plain HTTP.
NAME is the ClusterCatalog's name: by default the image repository's last
element or the directory's name. catalogd v1.2.0 serves the metas endpoint
only with --feature-gates=APIV1MetasHandler=true; --metas=false answers as
it does without. With --grpc=false, the catalog is read as catalogd reads
it, without operator-registry's validation (run catalog validate for that).`,
		Example: `  chartpilot catalog serve catalog
  chartpilot catalog serve catalog --http 127.0.0.1:8443
  chartpilot catalog serve registry.local:5000/me/my-catalog:v0.2.0 --grpc=false --http ` + httpapi.DefaultAddress + ` --plain-http
  curl http://` + httpapi.DefaultAddress + `/catalogs/my-catalog/api/v1/metas?schema=olm.channel`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Procs, "procs", 1, "threads running Go code (GOMAXPROCS) once the catalog is loaded, which uses every CPU; 0 keeps the default (GOMAXPROCS in the environment is kept unless --procs is given)")
	fl.StringVar(&o.Address, "address", o.Address, "host:port to listen on")
	fl.IntVar(&o.port, "port", 0, "port to listen on, overriding the port of --address")
	fl.BoolVar(&o.verbose, "verbose", false, "log the catalog load (sizes, durations), and each HTTP request, to stderr")
	fl.DurationVar(&o.ShutdownGrace, "shutdown-grace", serve.DefaultShutdownGrace, "on SIGTERM or Ctrl-C, how long calls in flight may take to finish before they are cut off")
	fl.BoolVar(&o.grpc, "grpc", o.grpc, "serve OLM's registry gRPC API on --address; --grpc=false serves only --http")
	fl.StringVar(&o.http, "http", "", "also serve catalogd's HTTP API (OLM v1) on `ADDRESS` (host:port), e.g. "+httpapi.DefaultAddress)
	fl.StringVar(&o.CatalogName, "catalog-name", "", "the catalog's NAME in the HTTP API's URLs, as a ClusterCatalog's (default: the image repository's last element or the directory's name)")
	fl.BoolVar(&o.plainHTTP, "plain-http", false, "serve the HTTP API over plain HTTP instead of HTTPS")
	fl.StringVar(&o.tlsCert, "tls-cert", "", "the HTTP API's serving certificate (PEM), as catalogd's --tls-cert (default: one generated at start)")
	fl.StringVar(&o.tlsKey, "tls-key", "", "the key of --tls-cert (PEM)")
	fl.BoolVar(&o.metas, "metas", o.metas, "serve the HTTP API's metas endpoint (catalogd's APIV1MetasHandler feature gate)")
	return cmd
}

func (o *serveOptions) complete(cmd *cobra.Command, args []string) error {
	o.Dir = o.f.dir
	if len(args) == 1 {
		o.Dir = args[0]
		if ociimage.IsReference(args[0]) {
			o.Dir, o.Image = "", args[0]
		}
	}
	if o.port != 0 {
		host, _, err := net.SplitHostPort(o.Address)
		if err != nil {
			return fmt.Errorf("--address: %w", err)
		}
		o.Address = net.JoinHostPort(host, strconv.Itoa(o.port))
	}
	if o.verbose {
		o.Log = o.streams.ErrOut
	}
	o.Procs = serve.ResolveProcs(o.Procs, cmd.Flags().Changed("procs"), os.Getenv)
	o.NoGRPC = !o.grpc
	for _, name := range []string{"catalog-name", "plain-http", "tls-cert", "tls-key", "metas"} {
		if cmd.Flags().Changed(name) {
			o.httpOnlyFlagsUsed = append(o.httpOnlyFlagsUsed, "--"+name)
		}
	}
	if o.http != "" {
		o.HTTP = &httpapi.ServerOptions{
			Address:        o.http,
			PlainHTTP:      o.plainHTTP,
			CertFile:       o.tlsCert,
			KeyFile:        o.tlsKey,
			HandlerOptions: httpapi.HandlerOptions{DisableMetas: !o.metas},
		}
	}
	return nil
}

func (o *serveOptions) validate() error {
	switch {
	case o.http == "" && !o.grpc:
		return errors.New("--grpc=false leaves nothing to serve: add --http HOST:PORT")
	case o.http == "" && len(o.httpOnlyFlagsUsed) > 0:
		return fmt.Errorf("%s configure the HTTP API: add --http HOST:PORT", strings.Join(o.httpOnlyFlagsUsed, ", "))
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case o.plainHTTP && o.tlsCert != "":
		return errors.New("--plain-http serves no certificate: leave out --tls-cert and --tls-key")
	}
	return nil
}

func (o *serveOptions) run(ctx context.Context) error {
	ctx, cancel := runcmd.SignalContext(ctx)
	defer cancel()
	what := cmp.Or(o.Image, o.Dir)
	return serve.Serve(ctx, o.Options, func(s *serve.Server) {
		out := o.streams.Out
		if s.Addr() != "" {
			fmt.Fprintf(out, "serving catalog %s on %s\n", what, s.Addr())
		}
		if h := s.HTTP(); h != nil {
			fmt.Fprintf(out, "serving catalog %s as %q over catalogd's HTTP API: %s/%s\n", what, s.CatalogName, h.BaseURL(s.CatalogName), httpapi.AllPath)
			if f := h.CertFile(); f != "" && o.tlsCert == "" {
				fmt.Fprintf(out, "  its certificate, generated for this run: %s (curl --cacert %s)\n", f, f)
			}
		}
	})
}
