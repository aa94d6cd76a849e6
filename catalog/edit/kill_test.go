package edit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/render"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/flock"
)

// Environment variables that choose the kill trials' number and seed, to
// run more of them by hand or repeat a failed run.
const (
	killTrialsEnv = "CHARTPILOT_CATALOG_KILL_TRIALS"
	killSeedEnv   = "CHARTPILOT_CATALOG_KILL_SEED"
)

// The helper process's instructions, from TestKillAdd to TestAddProcess.
const (
	addProcessDirEnv    = "CHARTPILOT_TEST_ADD_PROCESS_DIR"
	addProcessBundleEnv = "CHARTPILOT_TEST_ADD_PROCESS_BUNDLE"
	addProcessInitEnv   = "CHARTPILOT_TEST_ADD_PROCESS_INIT"
)

// TestAddProcess is the `catalog add` that TestKillAdd kills: this test
// binary re-run with the helper's environment adds one bundle, as the
// command does (Add), and exits. Run without it, it skips.
func TestAddProcess(t *testing.T) {
	dir := os.Getenv(addProcessDirEnv)
	if dir == "" {
		t.Skip("the helper process of TestKillAdd")
	}
	opts := AddOptions{Dir: dir, BundleDir: os.Getenv(addProcessBundleEnv), InitPackage: os.Getenv(addProcessInitEnv) != ""}
	if _, err := Add(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestKillAdd kills `catalog add` (SIGKILL) at random moments while it adds
// a bundle to a catalog of 1,200 bundles (one package of 200 whose file it
// rewrites, 40 of 25), or a bundle of a new package (--init-package), and
// checks after each kill that the lock is free at once, that the catalog
// validates, that it renders exactly as before the add or exactly as the
// add would leave it, holding the same files (nothing half-written, no
// temporary file a loader would read), and that the add then completes.
// Every other kill, and every one of a new package's add, aims at the
// write, and enough of those of each kind of add must land inside it (half
// of a package file's rewrite, one of a new package's, whose write is a
// fraction of a millisecond): the staging directory, which the writer
// creates for its first file and removes when done, is still there after
// the kill.
func TestKillAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("the kill trials start 40 processes: full tier")
	}
	trials, seed := 20, uint64(time.Now().UnixNano())
	if v, err := strconv.Atoi(os.Getenv(killTrialsEnv)); err == nil {
		trials = v
	}
	if v, err := strconv.ParseUint(os.Getenv(killSeedEnv), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d trials, seed %d (%s=%d repeats them)", trials, seed, killSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	parent := t.TempDir()
	dir := filepath.Join(parent, "catalog")
	catalogtest.GenerateCatalog(t, dir, 40, 25)
	catalogtest.GenerateCatalog(t, dir, 1, 200) // operator-000 again, with 200 bundles
	if _, err := LockPath(dir); err != nil {
		t.Fatal(err)
	}

	staging, err := stagingPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	// aimed and hits count the kills aimed at the write, and those that
	// landed inside it, by kind of add.
	aimed, hits := map[string]int{}, map[string]int{}
	before := catalogState(t, dir)
	for i := range trials {
		opts := AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "operator-000", Version: fmt.Sprintf("100.%d.0", i), Channels: "stable"})}
		kind := "package's file rewritten"
		if i%3 == 2 {
			kind = "new package"
			pkg := fmt.Sprintf("fresh-%03d", i)
			opts = AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: pkg, Version: "1.0.0", Channels: "stable"}), InitPackage: true}
		}
		// The add, run to its end on a copy: what a complete add leaves,
		// and how long one takes now (the machine's load varies).
		want, took := addOnCopy(t, opts)

		// A new package's write is a fraction of a millisecond: every
		// one is aimed at.
		atWrite := i%2 == 1 || opts.InitPackage
		if atWrite {
			// What the last killed writer left in the staging directory
			// (the next writer clears it, as the random kills see) would
			// pass for this writer's.
			if err := os.RemoveAll(staging); err != nil {
				t.Fatal(err)
			}
		}
		cmd := addProcess(opts)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		// Every other kill aims at the write, which takes a millisecond
		// or two of the add (a new package's, less): shortly after the
		// staging directory's appearance.
		when := "at random"
		delay := time.Duration(rng.Int64N(int64(took * 9 / 10)))
		if atWrite {
			when, delay = "at the write", time.Duration(rng.Int64N(int64(time.Millisecond)))
			if opts.InitPackage {
				delay = 0
			}
			waitForPath(staging, exited)
		}
		time.Sleep(delay)
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Fatalf("trial %d: the killed add did not end", i)
		}
		// Read before anything locks the catalog, which clears it.
		_, err := os.Stat(staging)
		inWrite := err == nil
		if atWrite {
			aimed[kind]++
			if inWrite {
				hits[kind]++
			}
		}
		when = fmt.Sprintf("killed %s after %s (an add takes %s; %s; inside the write: %v)", when, delay.Round(time.Microsecond), took.Round(time.Millisecond), kind, inWrite)

		checkLockFree(t, dir)
		if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
			t.Fatalf("trial %d, %s: the catalog does not validate: %v", i, when, err)
		}
		got := catalogState(t, dir)
		outcome := "new"
		switch {
		case got.equal(before):
			outcome = "old"
			// The lock is free: the add goes through at once.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			_, err := Add(ctx, opts)
			cancel()
			if err != nil {
				t.Fatalf("trial %d: the add after the kill: %v", i, err)
			}
			if now := catalogState(t, dir); !now.equal(want) {
				t.Fatalf("trial %d: the add after the kill left %s", i, now.diff(want))
			}
		case !got.equal(want):
			t.Fatalf("trial %d, %s: the catalog is neither the old state nor the new: against the old %s; against the new %s", i, when, got.diff(before), got.diff(want))
		}
		if cmd.ProcessState.Exited() {
			outcome += fmt.Sprintf(", the add had exited (%v)", waitErr)
		}
		outcomes[outcome]++
		t.Logf("trial %d: %s: %s", i, when, outcome)
		before = want
	}
	t.Logf("%d kills: %v; aimed at the write %v, inside it %v", trials, outcomes, aimed, hits)
	for _, kind := range slices.Sorted(maps.Keys(aimed)) {
		// Half the kills aimed at a rewrite land in it; a new package's
		// write is too short for a kill from outside to land in it as
		// surely (about half do): one at least.
		want := (aimed[kind] + 1) / 2
		if kind == "new package" {
			want = 1
		}
		if hits[kind] < want {
			t.Errorf("%d of %d kills aimed at the write of a %s landed inside it, want at least %d: the trials do not test what they mean to", hits[kind], aimed[kind], kind, want)
		}
	}

	// A completed write leaves nothing beside the catalog but its lock,
	// whatever the killed writers left.
	if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "operator-000", Version: "200.0.0", Channels: "stable"})}); err != nil {
		t.Fatal(err)
	}
	lock, _ := LockPath(dir)
	var left []string
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if p := filepath.Join(parent, e.Name()); p != dir && p != lock {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("left beside the catalog: %v", left)
	}
}

// waitForPath returns once path exists or the process has exited.
func waitForPath(path string, exited <-chan struct{}) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-exited:
			return
		default:
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// addProcess is TestAddProcess adding opts's bundle.
func addProcess(opts AddOptions) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestAddProcess$")
	cmd.Env = append(os.Environ(), addProcessDirEnv+"="+opts.Dir, addProcessBundleEnv+"="+opts.BundleDir)
	if opts.InitPackage {
		cmd.Env = append(cmd.Env, addProcessInitEnv+"=1")
	}
	return cmd
}

// addOnCopy runs the add process to its end on a copy of the catalog and
// returns the state it leaves and how long the process took.
func addOnCopy(t *testing.T, opts AddOptions) (catalogSnapshot, time.Duration) {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(cp, os.DirFS(opts.Dir)); err != nil {
		t.Fatal(err)
	}
	opts.Dir = cp
	cmd := addProcess(opts)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("add on a copy of the catalog: %v\n%s", err, out)
	}
	return catalogState(t, cp), time.Since(start)
}

// checkLockFree fails unless the catalog's lock can be taken at once.
func checkLockFree(t *testing.T, dir string) {
	t.Helper()
	path, err := LockPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := flock.TryLock(path)
	if err != nil {
		t.Fatalf("the lock is not free after the kill: %v", err)
	}
	unlock()
}

// catalogSnapshot is what a kill may change: the catalog as rendered and
// the files under its directory.
type catalogSnapshot struct {
	render []byte
	files  []string
}

func catalogState(t *testing.T, dir string) catalogSnapshot {
	t.Helper()
	var s catalogSnapshot
	var buf bytes.Buffer
	if err := render.Render(t.Context(), &buf, os.DirFS(dir), render.Options{}); err != nil {
		t.Fatalf("rendering the catalog: %v", err)
	}
	s.render = buf.Bytes()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			s.files = append(s.files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s catalogSnapshot) equal(o catalogSnapshot) bool {
	return bytes.Equal(s.render, o.render) && slices.Equal(s.files, o.files)
}

// diff says how s differs from o, briefly.
func (s catalogSnapshot) diff(o catalogSnapshot) string {
	var parts []string
	if !slices.Equal(s.files, o.files) {
		parts = append(parts, fmt.Sprintf("files %v, want %v", s.files, o.files))
	}
	if !bytes.Equal(s.render, o.render) {
		parts = append(parts, fmt.Sprintf("rendered %d bytes, want %d", len(s.render), len(o.render)))
	}
	return strings.Join(parts, "; ")
}

// What a writer killed mid-write leaves, in the staging directory beside
// the catalog (a temporary package file cut short, a new package's
// directory), is outside the catalog: the catalog loads and validates as
// before, and the next writer clears it away.
func TestKilledWriterLeftovers(t *testing.T) {
	dir := initPackage(t, "w")
	addVersions(t, dir, "w", "stable", "1.0.0")
	staging, err := stagingPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.WriteFile(t, filepath.Join(staging, ".catalog.yaml.tmp-1"), "schema: olm.package\nname: w\n---\nschema: olm.bun")
	catalogtest.WriteFile(t, filepath.Join(staging, "v.tmp-2", "catalog.yaml"), "schema: olm.package\nname: w\n")
	if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
		t.Fatalf("the catalog with a killed writer's leftovers: %v", err)
	}
	addVersions(t, dir, "w", "stable", "1.1.0")
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("the staging directory is still there after a write: %v", err)
	}
}

// An add that initializes its package writes the package with its bundle
// at once: a kill between an init and an add would leave a package with
// no bundle, which does not validate. The write hook here fails every
// write but the first, as a kill after it would stop the others.
func TestAddInitializesThePackageInOneWrite(t *testing.T) {
	dir := initPackage(t, "w")
	addVersions(t, dir, "w", "stable", "1.0.0")
	var writes []string
	firstOnly := func(path string, data []byte, perm os.FileMode) error {
		writes = append(writes, path)
		if len(writes) > 1 {
			return errors.New("killed")
		}
		return atomicfile.WriteFile(path, data, perm)
	}
	bundle := catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "v", Version: "1.0.0", Channels: "stable"})
	if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: bundle, InitPackage: true, writeFile: firstOnly}); err != nil {
		t.Fatalf("Add() = %v after %d writes (%v)", err, len(writes), writes)
	}
	if len(writes) != 1 {
		t.Errorf("%d writes (%v), want 1", len(writes), writes)
	}
	catalogtest.MustContain(t, readPackageFile(t, dir, "v"), "name: v.v1.0.0", "defaultChannel: stable", "description: The v operator manages widgets.")
	if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
}
