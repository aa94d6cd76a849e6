package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// ObjectStoreName is the cluster's S3-compatible object store: gofakes3 on
// its filesystem backend, in the state directory, behind our check of
// every request's AWS Signature Version 4 (tools/storage/object-store).
const ObjectStoreName = "object-store"

// ObjectStore says how to reach the cluster's object store, over plain
// HTTP with path-style bucket addressing.
type ObjectStore struct {
	// Endpoint is its host:port from this host, on loopback.
	Endpoint string `json:"endpoint"`
	// PodEndpoint is its host:port from pods: the bridge's address on a
	// real node; empty on a kwok node, whose pods never run.
	PodEndpoint string `json:"podEndpoint,omitempty"`
	// Region is the region to sign for; the store takes any.
	Region string `json:"region"`
	// AccessKeyID and SecretAccessKey are generated at the cluster's first
	// start; requests signed with anything else are refused.
	AccessKeyID     string `json:"accessKeyID"`
	SecretAccessKey string `json:"secretAccessKey"`
}

// objectStoreRegion is what clients should sign for.
const objectStoreRegion = "us-east-1"

// ObjectStore returns the endpoints and credentials of the cluster's object
// store (once Up has started it).
func (c *Cluster) ObjectStore() (ObjectStore, error) {
	creds, err := c.objectStoreCredentials()
	if err != nil {
		return ObjectStore{}, err
	}
	s := ObjectStore{Endpoint: loopback(c.state.Ports.ObjectStore), Region: objectStoreRegion, AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}
	if c.state.Node == NodeReal {
		s.PodEndpoint = net.JoinHostPort(node.HostIP, strconv.Itoa(c.state.Ports.ObjectStore))
	}
	return s, nil
}

// credentialsFile holds the store's credentials (mode 0600).
func (c *Cluster) credentialsFile() string { return c.path(ObjectStoreName, "credentials.json") }

type storeCredentials struct {
	AccessKeyID     string `json:"accessKeyID"`
	SecretAccessKey string `json:"secretAccessKey"`
}

func (c *Cluster) objectStoreCredentials() (storeCredentials, error) {
	var creds storeCredentials
	data, err := os.ReadFile(c.credentialsFile())
	if errors.Is(err, os.ErrNotExist) {
		return creds, fmt.Errorf("%w in %s (run `chartpilot cluster up`)", ErrNotRunning, c.opts.StateDir)
	}
	if err != nil {
		return creds, fmt.Errorf("reading the object store's credentials: %w", err)
	}
	if err := json.Unmarshal(data, &creds); err != nil {
		return creds, fmt.Errorf("reading %s: %w", c.credentialsFile(), err)
	}
	return creds, nil
}

// ensureObjectStoreCredentials generates the store's credentials at the
// cluster's first start, readable by its owner only.
func (c *Cluster) ensureObjectStoreCredentials() error {
	if _, err := os.Stat(c.credentialsFile()); err == nil {
		return nil
	}
	if err := os.MkdirAll(c.path(ObjectStoreName), 0o700); err != nil {
		return err
	}
	creds := storeCredentials{AccessKeyID: "chartpilot-" + rand.Text()[:12], SecretAccessKey: rand.Text() + rand.Text()[:14]}
	data, err := json.MarshalIndent(creds, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(c.credentialsFile(), append(data, '\n'), 0o600)
}

// objectStore is the store's component: on loopback, and on a real node
// on the host's address on the node's link too, where pods reach it.
func (c *Cluster) objectStore() component {
	addrs := []string{loopback(c.state.Ports.ObjectStore)}
	if c.state.Node == NodeReal {
		addrs = append(addrs, net.JoinHostPort(node.HostIP, strconv.Itoa(c.state.Ports.ObjectStore)))
	}
	comp := component{
		name:     ObjectStoreName,
		addrs:    addrs,
		endpoint: "http://" + addrs[len(addrs)-1],
		health: func(ctx context.Context) error {
			return c.probe(ctx, plainHTTP, "http://"+addrs[0]+"/-/healthz", "ok")
		},
	}
	// The credentials go in the environment (as the AWS tools read
	// them), not in the arguments that every user of the host can list.
	creds, err := c.objectStoreCredentials()
	if err == nil {
		comp.env = []string{"AWS_ACCESS_KEY_ID=" + creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey}
	}
	comp.args = []string{"-root=" + c.path(ObjectStoreName, "data"), "-listen=" + strings.Join(addrs, ",")}
	return comp
}
