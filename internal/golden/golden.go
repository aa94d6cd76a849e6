package golden

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

// Files reads every file under dir, by slash-separated path relative to
// dir. A missing dir has no files.
func Files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// Check compares files with the golden tree in dir, naming each file that is
// missing, extra or different; with update it rewrites dir with files instead.
func Check(t testing.TB, dir string, files map[string][]byte, update bool) {
	t.Helper()
	if update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for rel, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := Files(t, dir)
	var names []string
	for rel := range files {
		names = append(names, rel)
	}
	for rel := range want {
		if _, ok := files[rel]; !ok {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	for _, rel := range names {
		got, ok := files[rel]
		w, wok := want[rel]
		switch {
		case !ok:
			t.Errorf("%s: not generated (the golden files in %s have it)", rel, dir)
		case !wok:
			t.Errorf("%s: generated, not in the golden files in %s (run go test -update)", rel, dir)
		case !bytes.Equal(got, w):
			t.Errorf("%s differs from %s (run go test -update and review the diff):\n%s", rel, filepath.Join(dir, rel), diff(w, got, filepath.Join(dir, rel)))
		}
	}
}

// File compares got with the golden file at path, naming it and showing got
// when they differ; with update it writes got there instead.
func File(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update and review the diff):\n%s", path, diff(want, got, path))
	}
}

// diff is the unified diff from the golden file at path (want) to what was
// generated (got). It cannot fail: it writes to a strings.Builder.
func diff(want, got []byte, path string) string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)), FromFile: path, ToFile: "generated", Context: 3})
	return d
}
