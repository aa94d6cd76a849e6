package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		// existing content, if any
		before []byte
		data   []byte
		perm   os.FileMode
	}{
		{name: "new file in a new directory", data: []byte("a"), perm: 0o644},
		{name: "replaces existing content", before: []byte("old content"), data: []byte("new"), perm: 0o600},
		{name: "empty file", data: nil, perm: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "f.txt")
			if tt.before != nil {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tt.before, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, tt.data, tt.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tt.data) {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			fi, _ := os.Stat(path)
			if fi.Mode().Perm() != tt.perm {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.perm)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
			}
		})
	}
}

// WriteFileVia leaves nothing in the file's directory but the file, and
// nothing in its temporary directory.
func TestWriteFileVia(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	for _, data := range []string{"old", "new"} {
		if err := WriteFileVia(tmp, path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Errorf("content = %q, %v; want %q", got, err, data)
		}
	}
	for _, d := range []string{tmp, dir} {
		entries, _ := os.ReadDir(d)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if want := map[string]int{tmp: 0, dir: 1}[d]; len(names) != want {
			t.Errorf("%s holds %v, want %d entries", d, names, want)
		}
	}
}

func TestWriteFileIntoAFileFails(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(blocker, "f"), []byte("y"), 0o644); err == nil {
		t.Fatal("writing under a regular file succeeded")
	}
}

// MkdirTemp makes directories with the mode mkdir would give them: 0o777
// less the umask (this process's umask is not changed: tests run in
// parallel processes, and the umask is process-wide).
func TestMkdirTemp(t *testing.T) {
	parent := t.TempDir()
	// What mkdir makes here, under this process's umask.
	ref := filepath.Join(parent, "ref")
	if err := os.Mkdir(ref, 0o777); err != nil {
		t.Fatal(err)
	}
	refInfo, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 3 {
		dir, err := MkdirTemp(parent, ".proj.init-*.tmp")
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(dir)
		if filepath.Dir(dir) != parent || !strings.HasPrefix(base, ".proj.init-") || !strings.HasSuffix(base, ".tmp") || seen[base] {
			t.Errorf("MkdirTemp made %s", dir)
		}
		seen[base] = true
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != refInfo.Mode().Perm() {
			t.Errorf("%s: mode %v, want %v (what mkdir makes)", dir, fi.Mode(), refInfo.Mode())
		}
	}
	if _, err := MkdirTemp(filepath.Join(parent, "missing"), "x-*"); err == nil {
		t.Error("MkdirTemp in a missing directory succeeded")
	}
}
