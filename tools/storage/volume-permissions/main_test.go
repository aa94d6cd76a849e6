package main

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// event encodes one inotify event as the kernel does, its name NUL-padded.
func event(mask uint32, name string, pad int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent)
	binary.NativeEndian.PutUint32(b[4:8], mask)
	nameLen := 0
	if name != "" {
		nameLen = len(name) + pad
	}
	binary.NativeEndian.PutUint32(b[12:16], uint32(nameLen))
	if name != "" {
		b = append(b, name...)
		b = append(b, make([]byte, pad)...)
	}
	return b
}

func TestDirEvents(t *testing.T) {
	tests := []struct {
		name string
		buf  []byte
		want []string
	}{
		{"one directory", event(unix.IN_CREATE|unix.IN_ISDIR, "pv-1", 4), []string{"pv-1"}},
		{"a file is not a volume", event(unix.IN_CREATE, "file", 4), nil},
		{"two events, one a move", append(event(unix.IN_CREATE|unix.IN_ISDIR, "a", 3), event(unix.IN_MOVED_TO|unix.IN_ISDIR, "bb", 14)...), []string{"a", "bb"}},
		{"an event without a name", event(unix.IN_IGNORED, "", 0), nil},
		{"a truncated event is dropped", event(unix.IN_CREATE|unix.IN_ISDIR, "pv", 6)[:20], nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dirEvents(tt.buf); !slices.Equal(got, tt.want) {
				t.Errorf("dirEvents = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRun watches a real directory: a volume there before the start and
// one created after both get an emptyDir's mode, a file keeps its own, and
// the health socket answers once it watches.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "before")
	if err := os.Mkdir(old, 0o750); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "health.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, dir, socket, t.Logf) }()
	waitFor(t, func() bool {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the health socket")

	fresh := filepath.Join(dir, "after")
	if err := os.Mkdir(fresh, 0o750); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, fresh} {
		waitFor(t, func() bool { st, err := os.Stat(p); return err == nil && st.Mode().Perm() == volumeMode }, p+" mode 0777")
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want it untouched", st.Mode().Perm())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return once cancelled")
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A directory at the path that is not this process's own is refused, and
// a symlink in it changes nothing outside it: a local user who made
// /tmp/hostpath_pv first, or planted a link, gets nothing made 0777.
func TestDecoys(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{name: "a symlink", setup: func(t *testing.T, dir string) { mustDo(t, os.Symlink(outside, dir)) }, want: "symlink"},
		{name: "writable by others", setup: func(t *testing.T, dir string) {
			mustDo(t, os.Mkdir(dir, 0o755))
			mustDo(t, os.Chmod(dir, 0o777))
		}, want: "lets others write"},
		{name: "another user's", setup: func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("making a directory another user's takes root")
			}
			mustDo(t, os.Mkdir(dir, 0o755))
			mustDo(t, os.Chown(dir, 65534, 65534))
		}, want: "owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hostpath_pv")
			tt.setup(t, dir)
			v, err := openVolumes(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("openVolumes = %v, want an error saying %q", err, tt.want)
			}
			v.close()
			if st, _ := os.Stat(outside); st.Mode().Perm() != 0o750 {
				t.Errorf("the directory outside became %v", st.Mode().Perm())
			}
		})
	}
	t.Run("a symlink inside", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "hostpath_pv")
		v, err := openVolumes(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		mustDo(t, os.Symlink(outside, filepath.Join(dir, "link")))
		mustDo(t, v.fixAll(t.Logf))
		v.fix("link", t.Logf)
		v.fix("../outside", t.Logf)
		if st, _ := os.Stat(outside); st.Mode().Perm() != 0o750 {
			t.Errorf("the directory outside became %v", st.Mode().Perm())
		}
	})
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
