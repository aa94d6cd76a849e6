// Command catalogd-storage serves a catalog directory with catalogd's own
// serving code, operator-controller v1.11.0's: the catalog stored by its
// storage.LocalDirV1 (the metas index with --metas, as its
// APIV1MetasHandler feature gate does), answered by its
// StorageServerHandler behind the gzip and metrics middleware its
// serverutil puts in front (klauspost/compress gzhttp at the version
// operator-controller pins). chartpilot's HTTP API tests compare
// `chartpilot catalog serve --http` with it, without a cluster.
//
// Its module path is under operator-controller's because Go lets only
// that tree import catalogd's internal packages: it is a test peer, never
// published. It serves plain HTTP on loopback; catalogd's TLS listener is
// net/http's and crypto/tls's, as chartpilot's.
//
//	catalogd-storage --dir DIR --name NAME --address 127.0.0.1:0 [--metas]
//
// It prints "serving BASEURL" once it answers, and serves until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"

	"github.com/klauspost/compress/gzhttp"

	"github.com/operator-framework/operator-controller/internal/catalogd/metrics"
	"github.com/operator-framework/operator-controller/internal/catalogd/storage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "catalogd-storage:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "the catalog directory")
	name := flag.String("name", "", "the ClusterCatalog's name")
	address := flag.String("address", "127.0.0.1:0", "host:port to listen on")
	metas := flag.Bool("metas", false, "serve the metas endpoint (catalogd's APIV1MetasHandler feature gate)")
	flag.Parse()
	if *dir == "" || *name == "" {
		return fmt.Errorf("--dir and --name are required")
	}
	lis, err := net.Listen("tcp", *address)
	if err != nil {
		return err
	}
	root, err := url.Parse("http://" + lis.Addr().String() + "/catalogs/")
	if err != nil {
		return err
	}
	store, err := os.MkdirTemp("", "catalogd-storage-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(store)
	mode := storage.MetasHandlerDisabled
	if *metas {
		mode = storage.MetasHandlerEnabled
	}
	s := storage.NewLocalDirV1(store, root, mode, storage.GraphQLQueriesDisabled)
	if err := s.Store(context.Background(), *name, os.DirFS(*dir)); err != nil {
		return err
	}
	handler := metrics.AddMetricsToHandler(gzhttp.GzipHandler(s.StorageServerHandler()))
	fmt.Println("serving", s.BaseURL(*name))
	return http.Serve(lis, handler)
}
