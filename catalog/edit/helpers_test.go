package edit

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// initPackage makes a catalog directory with an initialized package.
func initPackage(t testing.TB, pkg string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := Init(t.Context(), InitOptions{Dir: dir, Package: pkg, Description: "test package"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addVersions adds inline bundles of pkg at each version to the channels.
func addVersions(t testing.TB, dir, pkg, channels string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: pkg, Version: v, Channels: channels})}); err != nil {
			t.Fatalf("adding %s %s: %v", pkg, v, err)
		}
	}
}

// readPackageFile returns the content of a package's catalog.yaml.
func readPackageFile(t testing.TB, dir, pkg string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, pkg, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// linuxPathMax is Linux's PATH_MAX: a path, with its terminating NUL, of
// more bytes is refused (ENAMETOOLONG), to root too.
const linuxPathMax = 4096

// pathOfLength is a new directory path (not created) of exactly n bytes
// under a test directory, its parents created. Its base name is 100 to 200
// bytes: a sibling with a short name has room for longer names below it,
// and the catalog's lock file beside it fits NAME_MAX.
func pathOfLength(t testing.TB, n int) string {
	t.Helper()
	p := t.TempDir()
	for rest := n - len(p) - 1; rest > 200; rest = n - len(p) - 1 {
		p = filepath.Join(p, strings.Repeat("d", min(199, rest-101)))
	}
	p = filepath.Join(p, strings.Repeat("c", n-len(p)-1))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if len(p) != n {
		t.Fatalf("made a path of %d bytes, want %d", len(p), n)
	}
	return p
}

// snapshot records every file, directory and mode under dir.
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	var b bytes.Buffer
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %s\n", rel, fi.Mode(), fi.ModTime().UTC().Format("15:04:05.000000000"))
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
			b.WriteString("\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
