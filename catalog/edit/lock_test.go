package edit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

// TestConcurrentAdds runs eight adds to one package at once: each reads,
// changes and writes the same package file, so without the writer lock
// most of them would be lost.
func TestConcurrentAdds(t *testing.T) {
	t.Run("to an initialized package", func(t *testing.T) { testConcurrentAdds(t, initPackage(t, "w"), false) })
	// Every add may be the first: one initializes the package, none fails.
	t.Run("initializing the package", func(t *testing.T) { testConcurrentAdds(t, filepath.Join(t.TempDir(), "catalog"), true) })
}

func testConcurrentAdds(t *testing.T, dir string, initPackage bool) {
	const n = 8
	bundles := make([]string, n)
	for i := range n {
		bundles[i] = catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: fmt.Sprintf("1.%d.0", i), Channels: "stable"})
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = Add(t.Context(), AddOptions{Dir: dir, BundleDir: bundles[i], InitPackage: initPackage})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("add 1.%d.0: %v", i, err)
		}
	}
	cfg, err := fbc.LoadDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Bundles) != n {
		t.Errorf("%d bundles in the catalog after %d concurrent adds", len(cfg.Bundles), n)
	}
	if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
		t.Error(err)
	}
	// The lock file is beside the catalog, not in it.
	lock, err := LockPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(lock) != filepath.Dir(dir) {
		t.Errorf("lock file %s is not beside %s", lock, dir)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Error(err)
	}
}

// TestAddWaitsForAnotherProcess holds the catalog's lock here while another
// process (this test binary, re-run as a helper) adds a bundle: the add
// waits until the lock is released.
func TestAddWaitsForAnotherProcess(t *testing.T) {
	if dir := os.Getenv("CHARTPILOT_TEST_ADD_DIR"); dir != "" {
		if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: os.Getenv("CHARTPILOT_TEST_ADD_BUNDLE")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	dir := initPackage(t, "w")
	bundle := catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "stable"})
	unlock, err := lockDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAddWaitsForAnotherProcess$")
	cmd.Env = append(os.Environ(), "CHARTPILOT_TEST_ADD_DIR="+dir, "CHARTPILOT_TEST_ADD_BUNDLE="+bundle)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if snapshot(t, dir) != before {
		t.Error("the other process changed the catalog while this one held the lock")
	}
	unlock()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process's add: %v\n%s", err, out.String())
	}
	catalogtest.MustContain(t, readPackageFile(t, dir, "w"), "name: w.v1.0.0")
}

func TestLockWaitEndsWithContext(t *testing.T) {
	dir := initPackage(t, "w")
	unlock, err := lockDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = Add(ctx, AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "stable"})})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for another writer of catalog "+dir) {
		t.Errorf("Add while locked = %v, want the wait to end with the context", err)
	}
}
