package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/chartpilot/chartpilot/internal/flock"
)

// EnvDir names the directory that holds the binaries already built
// (`make test` sets it to bin/).
const EnvDir = "CHARTPILOT_TEST_BIN"

// The binaries' names, as make build writes them.
const (
	chartpilot = "chartpilot"
	operator   = "chartpilot-operator"
)

// Chartpilot returns the path of a chartpilot built from this source.
func Chartpilot(t testing.TB) string { return path(t, chartpilot) }

// Operator returns the path of a static chartpilot-operator built from
// this source, next to Chartpilot's (image build packs the one next to
// chartpilot).
func Operator(t testing.TB) string { return path(t, operator) }

// path is the named binary in $CHARTPILOT_TEST_BIN, or else in the bin/
// that build fills once per test binary.
func path(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		var err error
		if dir, err = built(); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (%s=%s)", name, err, EnvDir, dir)
	}
	return p
}

// built builds both binaries once per test binary.
var built = sync.OnceValues(build)

// build runs what make build runs, into the module's bin/. Test binaries
// of other packages may do the same at once: a lock keeps one build at a
// time, after which the go command finds the files up to date.
func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := flock.Lock(context.Background(), filepath.Join(dir, ".testbin.lock"))
	if err != nil {
		return "", fmt.Errorf("locking %s: %w", dir, err)
	}
	defer unlock()
	for _, name := range []string{chartpilot, operator} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s (set %s to a directory with it to skip this): %w\n%s", name, EnvDir, err, out)
		}
	}
	return dir, nil
}

// moduleRoot is two directories above this file's.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbin: no source path to find the module from")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("testbin: the module's go.mod: %w", err)
	}
	return root, nil
}
