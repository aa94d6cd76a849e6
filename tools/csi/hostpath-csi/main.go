// Command hostpath-csi is the local cluster's CSI driver: each volume is a
// directory on this one node, a snapshot is a copy of a volume's
// directory, and a volume created from a snapshot starts as a copy of it.
// It serves CSI's Identity, Controller and Node services on one unix
// socket, for the external provisioner and snapshotter and for the
// kubelet, and registers itself with the kubelet's plugin watcher.
//
// It is for a single-node test cluster: a volume's capacity is recorded,
// not enforced, and its data lives as long as the cluster's state.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrationSocket is the socket in the kubelet's plugins_registry
// directory; short, as a unix socket's path may not pass maxSocketPath.
const registrationSocket = "csi.sock"

// maxSocketPath is the longest path a unix socket may have (sun_path).
const maxSocketPath = 107

// options are the command's flags.
type options struct {
	name, nodeID, dir, endpoint, registrationDir string
}

func main() {
	var o options
	flag.StringVar(&o.name, "name", "hostpath.csi.chartpilot.io", "the driver's name (the CSIDriver object and the StorageClass's provisioner)")
	flag.StringVar(&o.nodeID, "node-id", "", "this node's name")
	flag.StringVar(&o.dir, "dir", "", "where volumes and snapshots are kept")
	flag.StringVar(&o.endpoint, "endpoint", "", "the unix socket to serve CSI on")
	flag.StringVar(&o.registrationDir, "registration-dir", "", "the kubelet's plugins_registry directory; empty registers nothing")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

func (o options) validate() error {
	if o.nodeID == "" || o.dir == "" || o.endpoint == "" {
		return errors.New("-node-id, -dir and -endpoint are required")
	}
	return nil
}

// run serves until ctx ends.
func run(ctx context.Context, o options) error {
	srv, err := listen(o)
	if err != nil {
		return err
	}
	return srv.serve(ctx)
}

// server is the driver listening on its sockets.
type server struct {
	grpcs     []*grpc.Server
	listeners []net.Listener
}

// listen makes the driver and listens on its sockets; once it returns,
// clients may connect.
func listen(o options) (*server, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	d, err := newDriver(o.name, o.nodeID, o.dir)
	if err != nil {
		return nil, err
	}
	s := &server{}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	if err := s.add(srv, o.endpoint); err != nil {
		return nil, err
	}
	if o.registrationDir != "" {
		reg := grpc.NewServer()
		registerapi.RegisterRegistrationServer(reg, registration{name: o.name, endpoint: o.endpoint, logf: log.Printf})
		if err := s.add(reg, filepath.Join(o.registrationDir, registrationSocket)); err != nil {
			s.close()
			return nil, err
		}
	}
	log.Printf("%s serving CSI on %s, volumes in %s", o.name, o.endpoint, o.dir)
	return s, nil
}

// add listens on a fresh unix socket at path for srv; a socket a previous
// run left is replaced.
func (s *server) add(srv *grpc.Server, path string) error {
	if len(path) > maxSocketPath {
		return fmt.Errorf("the socket %s is %d bytes long, over the %d a unix socket may have: use a shorter state directory", path, len(path), maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	s.grpcs, s.listeners = append(s.grpcs, srv), append(s.listeners, l)
	return nil
}

// serve serves until ctx ends or a server fails, then stops them all.
func (s *server) serve(ctx context.Context) error {
	errc := make(chan error, len(s.grpcs))
	for i, srv := range s.grpcs {
		go func() { errc <- srv.Serve(s.listeners[i]) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, srv := range s.grpcs {
		srv.GracefulStop()
	}
	return err
}

func (s *server) close() {
	for _, l := range s.listeners {
		_ = l.Close()
	}
}
