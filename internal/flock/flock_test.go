package flock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder, even in this process, waits.
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: %v, want ErrLocked", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held: %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		unlock2, err := Lock(context.Background(), path)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
}

// TestLockDiesWithTheProcess: a holder killed without unlocking leaves a
// lock the next one takes.
func TestLockDiesWithTheProcess(t *testing.T) {
	if os.Getenv("FLOCK_HOLD") != "" {
		if _, err := TryLock(os.Getenv("FLOCK_HOLD")); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		return
	}
	path := filepath.Join(t.TempDir(), "lock")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLockDiesWithTheProcess$")
	cmd.Env = append(os.Environ(), "FLOCK_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder: %q %v", buf, err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while another process holds it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	unlock()
}
