package process

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func spec(t *testing.T, script string) Spec {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	return Spec{
		Name:    "test",
		Path:    sh,
		Args:    []string{"-c", script},
		LogFile: filepath.Join(dir, "logs", "test.log"),
		PIDFile: filepath.Join(dir, "run", "test.pid"),
	}
}

func TestStartFindStop(t *testing.T) {
	// The daemon forks a child into its group: Stop must take both down.
	s := spec(t, `sleep 300 & echo started; wait`)
	d, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-d.PID(), syscall.SIGKILL) })

	pid, ok := Find(s.PIDFile)
	if !ok || pid != d.PID() {
		t.Fatalf("Find = %d, %v; want %d, true", pid, ok, d.PID())
	}
	waitFor(t, func() bool { return strings.Contains(LogTail(s.LogFile, 5), "started") })

	if err := Stop(s.PIDFile, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("daemon still running after Stop")
	}
	if groupAlive(d.PID()) {
		t.Error("a child of the daemon outlived Stop")
	}
	if _, err := os.Stat(s.PIDFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left behind: %v", err)
	}
	if err := Stop(s.PIDFile, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Stop = %v, want ErrNotRunning", err)
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	s := spec(t, `trap "" TERM; echo ready; while :; do sleep 0.1; done`)
	d, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-d.PID(), syscall.SIGKILL) })
	waitFor(t, func() bool { return strings.Contains(LogTail(s.LogFile, 5), "ready") })
	if err := Stop(s.PIDFile, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := Find(s.PIDFile); ok {
		t.Error("daemon ignoring SIGTERM is still found after Stop")
	}
}

func TestFindRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		// content of the pid file; empty means no file
		content string
	}{
		{name: "no pid file"},
		{name: "garbage", content: "not a pid\n"},
		{name: "dead pid", content: "999999999\n/bin/sh\n"},
		// our own pid runs the test binary, not /bin/sleep: a recycled pid
		{name: "pid running another executable", content: strings.Join([]string{itoa(os.Getpid()), "/bin/sleep"}, "\n")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, itoa(i)+".pid")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if pid, ok := Find(path); ok {
				t.Errorf("Find = %d, true; want not found", pid)
			}
		})
	}
}

func TestExitedReportsCrash(t *testing.T) {
	s := spec(t, `echo "fatal: bad flag" >&2; exit 3`)
	d, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("crashing daemon not reported as exited")
	}
	if !strings.Contains(d.ExitError().Error(), "exit status 3") {
		t.Errorf("ExitError = %v", d.ExitError())
	}
	if tail := LogTail(s.LogFile, 1); tail != "fatal: bad flag" {
		t.Errorf("LogTail = %q", tail)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestLogTailShowsTheLatestStartOnly(t *testing.T) {
	s := spec(t, `echo first run; exit 1`)
	d, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	<-d.Exited()
	s.Args = []string{"-c", "echo second run; echo; echo done"}
	if d, err = Start(s); err != nil {
		t.Fatal(err)
	}
	<-d.Exited()
	if got, want := LogTail(s.LogFile, 10), "second run\ndone"; got != want {
		t.Errorf("LogTail = %q, want %q", got, want)
	}
	if got, want := LogTail(s.LogFile, 1), "done"; got != want {
		t.Errorf("LogTail(1) = %q, want %q", got, want)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "missing.log"), 5); got != "" {
		t.Errorf("LogTail of a missing file = %q", got)
	}
}

func TestMemory(t *testing.T) {
	rss, peak, err := Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss == 0 || peak < rss {
		t.Errorf("Memory = rss %d, peak %d; want 0 < rss <= peak", rss, peak)
	}
	if _, _, err := Memory(999999999); err == nil {
		t.Error("Memory of a missing process succeeded")
	}
}
