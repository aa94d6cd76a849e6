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

// Options says what a test binary's local cluster needs.
type Options struct {
	// WithoutOLM starts no OLM operators. Such clusters, and those with
	// OLM v1 only, need no machine-wide lock, so their test binaries run
	// beside each other.
	WithoutOLM bool
	// OLM is which OLM the cluster runs; empty is OLM v0.
	OLM cluster.OLMVersions
	// Setup runs once the cluster is up, before the tests (e.g. installing
	// a CRD or starting an operator); the func it returns, if any, runs after
	// them.
	Setup func(*Env) (teardown func(), err error)
}

// runsOLMv0 says whether the cluster runs OLM v0, whose operators listen on
// fixed ports of the host; OLM v1's take free ones.
func (o Options) runsOLMv0() bool {
	return !o.WithoutOLM && (o.OLM == "" || o.OLM == cluster.OLMv0 || o.OLM == cluster.OLMBoth)
}

// Main starts a local cluster with OLM in a temporary state directory, runs
// the tests with *env set, then stops the cluster and deletes its state. Use
// it from TestMain: os.Exit(clustertest.Main(m, &env)). With -short it
// starts nothing and leaves *env nil: the tests that use it call
// SkipIfShort.
//
// Progress (including a cold build of the components) goes to stderr.
//
// OLM's operators listen on fixed ports, so only one cluster with OLM can run
// on a machine: Main waits for a machine-wide lock first, which serializes
// the test binaries (go test runs packages in parallel) that use it.
func Main(m *testing.M, env **Env) int { return MainWith(m, env, Options{}) }

// MainWith is Main with options: the one fixture for "a local cluster for
// this test binary".
func MainWith(m *testing.M, env **Env, opts Options) int {
	flag.Parse() // for testing.Short
	if testing.Short() {
		return m.Run()
	}
	code, err := mainWith(m, env, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	return code
}

func mainWith(m *testing.M, env **Env, opts Options) (int, error) {
	ctx := context.Background()
	if opts.runsOLMv0() {
		unlock, err := lockOLM()
		if err != nil {
			return 0, err
		}
		defer unlock()
	}
	dir, err := os.MkdirTemp("", "chartpilot-cluster-")
	if err != nil {
		return 0, err
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
		return 0, fmt.Errorf("starting the local cluster: %w", err)
	}
	if opts.Setup != nil {
		teardown, err := opts.Setup(e)
		if err != nil {
			return 0, fmt.Errorf("setting up the local cluster: %w", err)
		}
		if teardown != nil {
			defer teardown()
		}
	}
	*env = e
	return m.Run(), nil
}

// MainAPIServer starts envtest's etcd and kube-apiserver (with env's CRDs
// and flags; nil means the defaults) for the whole test binary, runs the
// tests with *cfg set, and stops them. Use it from TestMain, after any setup
// of the binary's own: os.Exit(clustertest.MainAPIServer(m, env, &cfg)).
// With -short it starts nothing and leaves *cfg nil.
func MainAPIServer(m *testing.M, env *envtest.Environment, cfg **rest.Config) int {
	flag.Parse() // for testing.Short
	if testing.Short() {
		return m.Run()
	}
	code, err := mainAPIServer(m, env, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	return code
}

func mainAPIServer(m *testing.M, env *envtest.Environment, cfg **rest.Config) (int, error) {
	c, stop, err := startEnvtest(env)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "clustertest:", err)
		}
	}()
	*cfg = c
	return m.Run(), nil
}

// startEnvtest starts env (nil means the defaults) on the toolchain's
// binaries.
func startEnvtest(env *envtest.Environment) (*rest.Config, func() error, error) {
	assets, err := EnvtestAssets(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("building envtest binaries: %w", err)
	}
	if env == nil {
		env = &envtest.Environment{}
	}
	env.BinaryAssetsDirectory = assets
	// A CRD path that does not exist is a broken test, not a cluster
	// without that kind: envtest would skip it silently.
	env.ErrorIfCRDPathMissing = true
	if env.ControlPlaneStartTimeout == 0 {
		// envtest's default (20 s) is for its processes and the default
		// namespace to come up; a cold 2-core machine compiling beside the
		// tests took longer ("default namespace didn't register within
		// deadline"). A deadline to fail a start that is stuck, not one
		// a slow start should meet.
		env.ControlPlaneStartTimeout = StartTimeout
	}
	if env.ControlPlaneStopTimeout == 0 {
		// envtest leaves etcd and kube-apiserver running when they outlast
		// its stop timeout (20 s), which a loaded machine can exceed.
		env.ControlPlaneStopTimeout = StopTimeout
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest: %w", err)
	}
	stop := func() error {
		if err := env.Stop(); err != nil {
			return fmt.Errorf("stopping envtest: %w", err)
		}
		return nil
	}
	return cfg, stop, nil
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
	unlock, err := lockRealNode(t.Context(), t.Logf)
	if err != nil {
		t.Fatalf("locking the real node: %v", err)
	}
	t.Cleanup(unlock)
}

// lockRealNode takes the real node's lock, saying when it waits.
func lockRealNode(ctx context.Context, logf func(string, ...any)) (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "chartpilot-real-node.lock")
	unlock, err = flock.TryLock(path)
	if errors.Is(err, flock.ErrLocked) {
		logf("waiting for another test's real node (lock %s)", path)
		unlock, err = flock.Lock(ctx, path)
	}
	if err != nil {
		return nil, err
	}
	if err := reapOrphan(logf); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func start(ctx context.Context, stateDir string, opts Options) (*Env, error) {
	tools, err := toolchain.Ensure(ctx, toolchain.Options{Out: os.Stderr, OLMv1: opts.OLM == cluster.OLMv1 || opts.OLM == cluster.OLMBoth})
	if err != nil {
		return nil, err
	}
	c, err := cluster.New(cluster.Options{StateDir: stateDir, WithoutOLM: opts.WithoutOLM, OLM: opts.OLM, Out: os.Stderr})
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

// StartTimeout is how long envtest's processes get to start.
const StartTimeout = 3 * time.Minute

// StopTimeout is how long envtest's processes get to stop, for tests that
// start envtest themselves (in TestMain).
const StopTimeout = 2 * time.Minute

// StartAPIServer starts envtest's etcd and kube-apiserver for one test and
// stops them when it ends. Fields of env other than the binaries are the
// caller's (CRDs to install, flags); nil means the defaults.
func StartAPIServer(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	SkipIfShort(t)
	cfg, stop, err := startEnvtest(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return cfg
}
