package serve

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startOpmServe runs `bin serve dir` (bin is opm) until the test ends and returns its
// gRPC address on loopback. opm listens on every interface (":PORT", not
// configurable): acceptable for a test, and the reason chartpilot's own
// server binds 127.0.0.1.
func startOpmServe(t testing.TB, bin, dir string) string {
	t.Helper()
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
