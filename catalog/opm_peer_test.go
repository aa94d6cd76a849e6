package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// peerModule is the tools module that pins the peer binaries (opm here)
// the catalog tests and benchmarks compare against.
var peerModule = filepath.Join("..", "tools", "peers", "opm")

// opmPackage is opm's main package in operator-registry's module.
const opmPackage = "github.com/operator-framework/operator-registry/cmd/opm"

var (
	opmOnce sync.Once
	opmPath string
	opmErr  error
)

// opmBinary returns opm built from the peers module (operator-registry as
// it pins it), built once into the user's cache directory keyed by the
// module's go.mod and the Go version, so that later runs reuse it. A cold
// build takes minutes. CHARTPILOT_OPM names a prebuilt opm instead. Without
// a go command the test is skipped.
func opmBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHARTPILOT_OPM"); p != "" {
		return p
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build opm from %s (set CHARTPILOT_OPM to a built opm): %v", peerModule, err)
	}
	opmOnce.Do(func() { opmPath, opmErr = buildOpm(goCmd) })
	if opmErr != nil {
		t.Fatalf("building opm: %v", opmErr)
	}
	return opmPath
}

func buildOpm(goCmd string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(peerModule, "go.mod"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(gomod, runtime.Version()...))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "chartpilot", "peers", "opm-"+hex.EncodeToString(sum[:6]))
	bin := filepath.Join(dir, "opm")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages may build at once: one builds, the
	// others wait for it and reuse its binary.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := bin + ".tmp"
	// The tags avoid the gpgme C library containers/image wants otherwise.
	cmd := exec.Command(goCmd, "build", "-tags", "json1 containers_image_openpgp", "-o", tmp, opmPackage)
	cmd.Dir = peerModule
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(os.Stderr, "building opm from %s into %s (minutes on a cold cache)\n", peerModule, dir)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", opmPackage, peerModule, err, out.String())
	}
	return bin, os.Rename(tmp, bin)
}

// startOpmServe runs `opm serve dir` until the test ends and returns its
// gRPC address on loopback. opm listens on every interface (":PORT", not
// configurable): acceptable for a test, and the reason chartpilot's own
// server binds 127.0.0.1.
func startOpmServe(t testing.TB, dir string) string {
	t.Helper()
	bin := opmBinary(t)
	port := freePort(t)
	work := t.TempDir()
	var log bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	// Without --cache-dir, opm builds its serving cache in a temporary
	// directory, as chartpilot's server does by default.
	cmd := exec.CommandContext(ctx, bin, "serve", dir, "--port", port,
		// Its startup profiling endpoint defaults to the fixed port 6060.
		"--pprof-addr", "127.0.0.1:0",
		"--termination-log", filepath.Join(work, "termination.log"))
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting opm serve: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("opm serve log:\n%s", log.String())
		}
	})
	addr := "127.0.0.1:" + port
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			t.Fatal("opm serve exited (its log follows)")
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("opm serve not listening on %s after 2m (its log follows)", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback port free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")
}
