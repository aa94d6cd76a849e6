package httpapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// DefaultAddress is where a server listens unless told otherwise:
// loopback, on catalogd's port.
const DefaultAddress = "127.0.0.1:8443"

// DefaultShutdownGrace is how long requests in flight may take to finish
// once a server is told to stop: catalogd's.
const DefaultShutdownGrace = 30 * time.Second

// catalogd's server timeouts: a request must arrive within ReadTimeout, and
// the answer (the whole catalog, for /api/v1/all) go out within
// WriteTimeout.
const (
	readTimeout  = 5 * time.Second
	writeTimeout = 5 * time.Minute
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	HandlerOptions
	// Address is the host:port to listen on; default DefaultAddress. Port 0
	// picks a free port (see Server.Addr).
	Address string
	// PlainHTTP serves HTTP instead of HTTPS.
	PlainHTTP bool
	// CertFile and KeyFile are the PEM serving certificate and key, as
	// catalogd's --tls-cert and --tls-key; without them (and without
	// PlainHTTP) a certificate is generated at start, valid for loopback,
	// the listening host and Hosts, and written to Server.CertFile.
	CertFile, KeyFile string
	// Hosts are more names or addresses a generated certificate is valid for.
	Hosts []string
	// ShutdownGrace is how long requests in flight may take to finish once
	// Serve's context is done; default DefaultShutdownGrace.
	ShutdownGrace time.Duration
}

// Server serves catalogd's HTTP API on one listener.
type Server struct {
	srv   *http.Server
	lis   net.Listener
	grace time.Duration
	// scheme is http or https.
	scheme string
	// certFile is the PEM a client trusts; tmpDir, when set, holds a
	// generated one and is removed by Close.
	certFile, tmpDir string
}

// NewServer listens; it does not answer until Serve is called. Close
// releases everything.
func NewServer(ctx context.Context, opts ServerOptions) (_ *Server, err error) {
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("a serving certificate needs both its certificate and its key file")
	}
	if opts.PlainHTTP && opts.CertFile != "" {
		return nil, errors.New("a certificate is for HTTPS: leave it out to serve plain HTTP")
	}
	s := &Server{
		grace:  cmp.Or(opts.ShutdownGrace, DefaultShutdownGrace),
		scheme: "https",
		srv: &http.Server{
			Handler:      NewHandler(opts.HandlerOptions),
			ReadTimeout:  readTimeout,
			WriteTimeout: writeTimeout,
		},
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	address := cmp.Or(opts.Address, DefaultAddress)
	var cert tls.Certificate
	if opts.PlainHTTP {
		s.scheme = "http"
	} else if cert, err = s.certificate(opts, address); err != nil {
		// Before listening: a bad certificate is the error to report,
		// whatever holds the address.
		return nil, err
	}
	var lc net.ListenConfig
	if s.lis, err = lc.Listen(ctx, "tcp", address); err != nil {
		return nil, fmt.Errorf("serving catalogs over HTTP: %w", err)
	}
	if !opts.PlainHTTP {
		// As catalogd's: TLS 1.2 or later, and no "h2" offered, so HTTP/1.1.
		s.lis = tls.NewListener(s.lis, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return s, nil
}

// certificate loads the given serving certificate, or generates one and
// writes its PEM for clients.
func (s *Server) certificate(opts ServerOptions, address string) (tls.Certificate, error) {
	if opts.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
		s.certFile = opts.CertFile
		return cert, nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("address %s: %w", address, err)
	}
	cert, certPEM, err := selfSigned(certificateHosts(host, opts.Hosts), time.Now())
	if err != nil {
		return tls.Certificate{}, err
	}
	if s.tmpDir, err = os.MkdirTemp("", "chartpilot-catalog-https-*"); err != nil {
		return tls.Certificate{}, err
	}
	s.certFile = filepath.Join(s.tmpDir, "tls.crt")
	if err := os.WriteFile(s.certFile, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return cert, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// URL is the server's root: scheme://host:port, with a loopback host when
// the server listens on every address.
func (s *Server) URL() string {
	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		return s.scheme + "://" + s.Addr()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return s.scheme + "://" + net.JoinHostPort(host, port)
}

// BaseURL is a catalog's base, as a ClusterCatalog's status.urls.base:
// AllPath and MetasPath are below it.
func (s *Server) BaseURL(catalog string) string {
	return s.URL() + PathPrefix + url.PathEscape(catalog)
}

// CertFile is the PEM file of the serving certificate for clients to
// trust; "" over plain HTTP.
func (s *Server) CertFile() string { return s.certFile }

// Serve answers requests until ctx is done or Close is called. Once ctx is
// done, requests in flight have ShutdownGrace to finish; Serve returns when
// they have.
func (s *Server) Serve(ctx context.Context) error {
	drained := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(drained)
		sctx, cancel := context.WithTimeout(context.Background(), s.grace)
		defer cancel()
		if s.srv.Shutdown(sctx) != nil {
			s.srv.Close()
		}
	})
	err := s.srv.Serve(s.lis)
	if !stop() {
		<-drained
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving at once and removes a generated certificate.
func (s *Server) Close() error {
	if s.lis != nil {
		s.srv.Close()
		s.lis.Close() // when Serve never ran; closing twice is harmless
	}
	if s.tmpDir != "" {
		return os.RemoveAll(s.tmpDir)
	}
	return nil
}
