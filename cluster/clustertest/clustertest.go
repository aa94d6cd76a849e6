// Package clustertest gives tests a real cluster: the whole local cluster with
// OLM for end-to-end tests (one per test binary, through Main), or envtest's
// API server alone on the same etcd and kube-apiserver binaries for
// integration tests that need nothing more.
//
// `go test -short` is the fast tier: it starts neither. Main then runs the
// tests without a cluster, StartAPIServer skips its test, and every test
// that needs a cluster or API server started elsewhere (a TestMain of its
// own) calls SkipIfShort first. Such a TestMain checks testing.Short itself,
// after flag.Parse.
package clustertest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/flock"
)

// Env is the local cluster of a test binary.
type Env struct {
	Cluster *cluster.Cluster
	// Config is the cluster admin's client configuration.
	Config *rest.Config
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string
	// Tools is where kubectl and the other component binaries are.
	Tools *toolchain.Installation
	// UpTime is how long the cluster took to start.
	UpTime time.Duration
}

// Main starts a local cluster in a temporary state directory, runs the tests
// with *env set, then stops the cluster and deletes its state. Use it from
// TestMain: os.Exit(clustertest.Main(m, &env)). With -short it starts
// nothing and leaves *env nil: the tests that use it call SkipIfShort.
//
// Progress (including a cold build of the components) goes to stderr.
//
// OLM's operators listen on fixed ports, so only one cluster with OLM can run
// on a machine: Main waits for a machine-wide lock first, which serializes
// the test binaries (go test runs packages in parallel) that use it.
func Main(m *testing.M, env **Env) int { return MainWith(m, env, Options{}) }

// Options configure the cluster of MainWith.
type Options struct {
	// OLM is which OLM the cluster runs; empty is OLM v0.
	OLM cluster.OLMVersions
}

// MainWith is Main with a cluster configured by opts.
func MainWith(m *testing.M, env **Env, opts Options) int {
	flag.Parse() // for testing.Short
	if testing.Short() {
		return m.Run()
	}
	ctx := context.Background()
	unlock, err := lockOLM()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	defer unlock()
	dir, err := os.MkdirTemp("", "chartpilot-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	e, err := start(ctx, dir, opts)
	if e != nil && e.Cluster != nil {
		defer func() {
			if err := e.Cluster.Down(context.Background(), cluster.DownOptions{Wipe: true}); err != nil {
				fmt.Fprintln(os.Stderr, "clustertest: stopping the cluster:", err)
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest: starting the local cluster:", err)
		return 1
	}
	*env = e
	return m.Run()
}

// SkipIfShort skips t in the fast tier (go test -short): call it first in
// every test that needs a cluster or an API server.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a cluster or an API server: go test -short starts none")
	}
}

// lockOLM takes the machine-wide lock of the one cluster with OLM, waiting
// for the test binary holding it. The kernel releases it if we die.
func lockOLM() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "chartpilot-olm-cluster.lock")
	unlock, err = flock.TryLock(path)
	if errors.Is(err, flock.ErrLocked) {
		fmt.Fprintf(os.Stderr, "clustertest: waiting for another test's cluster with OLM (lock %s)\n", path)
		unlock, err = flock.Lock(context.Background(), path)
	}
	return unlock, err
}

// LockRealNode takes the machine-wide lock of the one real node (its bridge,
// iptables rules and kernel settings belong to the machine) for the rest of
// t, waiting for the test binary holding it.
func LockRealNode(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "chartpilot-real-node.lock")
	unlock, err := flock.TryLock(path)
	if errors.Is(err, flock.ErrLocked) {
		t.Logf("waiting for another test's real node (lock %s)", path)
		unlock, err = flock.Lock(t.Context(), path)
	}
	if err != nil {
		t.Fatalf("locking the real node: %v", err)
	}
	t.Cleanup(unlock)
}

func start(ctx context.Context, stateDir string, opts Options) (*Env, error) {
	c, err := cluster.New(cluster.Options{StateDir: stateDir, Out: os.Stderr, OLM: opts.OLM})
	if err != nil {
		return nil, err
	}
	tools, err := toolchain.Ensure(ctx, toolchain.Options{Out: os.Stderr, OLMv1: opts.OLM == cluster.OLMv1 || opts.OLM == cluster.OLMBoth})
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: c, Tools: tools, Kubeconfig: c.KubeconfigPath()}
	began := time.Now()
	if err := c.Up(ctx); err != nil {
		return e, err
	}
	e.UpTime = time.Since(began)
	if e.Config, err = c.RESTConfig(); err != nil {
		return e, err
	}
	return e, nil
}

// EnvtestAssets builds, if needed, the binaries envtest runs (etcd,
// kube-apiserver, kubectl) and returns their directory, to use as
// KUBEBUILDER_ASSETS or envtest.Environment.BinaryAssetsDirectory.
func EnvtestAssets(ctx context.Context) (string, error) {
	inst, err := toolchain.Ensure(ctx, toolchain.Options{Out: os.Stderr, Only: toolchain.EnvtestBinaries})
	if err != nil {
		return "", err
	}
	return inst.BinDir, nil
}

// SnapshotCRDs returns the directory of the VolumeSnapshot API's CRDs
// (copied from the CSI snapshotter's module by the toolchain), for envtest
// tests of what uses snapshots.
func SnapshotCRDs(ctx context.Context) (string, error) {
	inst, err := toolchain.Ensure(ctx, toolchain.Options{Out: os.Stderr, Only: toolchain.EnvtestBinaries, Node: true})
	if err != nil {
		return "", err
	}
	return inst.SnapshotCRDs, nil
}

// StopTimeout is how long envtest's processes get to stop, for tests that
// start envtest themselves (in TestMain).
const StopTimeout = 2 * time.Minute

// StartAPIServer starts envtest's etcd and kube-apiserver for one test and
// stops them when it ends. Fields of env other than the binaries are the
// caller's (CRDs to install, flags); nil means the defaults.
func StartAPIServer(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	SkipIfShort(t)
	assets, err := EnvtestAssets(context.Background())
	if err != nil {
		t.Fatalf("building envtest binaries: %v", err)
	}
	if env == nil {
		env = &envtest.Environment{}
	}
	env.BinaryAssetsDirectory = assets
	if env.ControlPlaneStopTimeout == 0 {
		// envtest leaves etcd and kube-apiserver running when they outlast
		// its stop timeout (20 s), which a loaded machine can exceed.
		env.ControlPlaneStopTimeout = StopTimeout
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return cfg
}
