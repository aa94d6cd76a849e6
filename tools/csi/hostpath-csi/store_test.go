package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestCapacity(t *testing.T) {
	tests := []struct {
		name     string
		r        *csi.CapacityRange
		want     int64
		wantFail bool
	}{
		{name: "none asked: the default", r: nil, want: defaultCapacity},
		{name: "required", r: &csi.CapacityRange{RequiredBytes: 5 << 20}, want: 5 << 20},
		{name: "a limit under the default", r: &csi.CapacityRange{LimitBytes: 1 << 20}, want: 1 << 20},
		{name: "a limit over the default", r: &csi.CapacityRange{LimitBytes: 10 << 30}, want: defaultCapacity},
		{name: "required over the limit", r: &csi.CapacityRange{RequiredBytes: 2, LimitBytes: 1}, wantFail: true},
		{name: "negative", r: &csi.CapacityRange{RequiredBytes: -1}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := capacity(tt.r)
			if (err != nil) != tt.wantFail || got != tt.want {
				t.Errorf("capacity(%v) = %d, %v; want %d, failure %v", tt.r, got, err, tt.want, tt.wantFail)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	a, b := idFor(volumesDir, "pvc-1"), idFor(volumesDir, "pvc-2")
	if a == b || a != idFor(volumesDir, "pvc-1") {
		t.Errorf("IDs not one per name: %s %s", a, b)
	}
	if s := idFor(snapshotsDir, "pvc-1"); s == a {
		t.Errorf("a snapshot and a volume of one name share ID %s", s)
	}
	for _, id := range []string{a, idFor(snapshotsDir, "x")} {
		if !validID(id) {
			t.Errorf("validID(%q) = false", id)
		}
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", "vol-A", string(make([]byte, 65))} {
		if validID(id) {
			t.Errorf("validID(%q) = true", id)
		}
	}
}

func TestMountPoint(t *testing.T) {
	tests := []struct{ line, want string }{
		{"36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw", "/mnt/parent"},
		{`40 30 0:5 / /var/lib/a\040b rw - tmpfs tmpfs rw`, "/var/lib/a b"},
		{`40 30 0:5 / /x\134y rw - tmpfs tmpfs rw`, `/x\y`},
	}
	for _, tt := range tests {
		if got, ok := mountPoint(tt.line); !ok || got != tt.want {
			t.Errorf("mountPoint(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
	if _, ok := mountPoint("short line"); ok {
		t.Error("a short line has a mount point")
	}
}

// TestCopyTree: a copy keeps contents, modes, links and times, and fills
// read-only directories.
func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "ro", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(src, "ro", "deep", "f"), []byte("deep"), 0o640))
	must(os.WriteFile(filepath.Join(src, "exec"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("exec", filepath.Join(src, "link")))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	must(os.Chtimes(filepath.Join(src, "exec"), old, old))
	must(os.Chmod(filepath.Join(src, "ro"), 0o555))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "ro"), 0o755) })

	dst := filepath.Join(t.TempDir(), "copy")
	n, err := copyTree(src, dst)
	must(err)
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
	if n != int64(len("deep")+len("#!/bin/sh\n")) {
		t.Errorf("copied %d bytes", n)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "ro", "deep", "f")); err != nil || string(data) != "deep" {
		t.Errorf("deep file: %q, %v", data, err)
	}
	for path, mode := range map[string]os.FileMode{"ro": 0o555, "exec": 0o755, "ro/deep/f": 0o640} {
		if fi, err := os.Lstat(filepath.Join(dst, path)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "exec" {
		t.Errorf("link: %q, %v", l, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "exec")); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("exec's time %v, %v; want %v", fi.ModTime(), err, old)
	}
}
