package mover

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tarOf archives headers (a regular file's content is its Linkname's
// bytes when Size is set), unchecked: names may climb out.
func tarOf(t testing.TB, headers ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range headers {
		data := []byte(nil)
		if h.Typeflag == tar.TypeReg {
			data, h.Linkname = []byte(h.Linkname), ""
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzExtract extracts arbitrary archives (tar bytes gzipped here, or raw
// bytes taken as the gzip stream) into a volume beside a directory and a
// file it must not reach: whatever the entries (names that climb out,
// symlinks out and files through them, odd types), nothing outside the
// volume changes; an error says it is about the archive or names the
// entry; a success reports the whole archive read.
func FuzzExtract(f *testing.F) {
	reg := func(name, content string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Linkname: content}
	}
	dir := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
	link := func(name, target string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}
	}
	for _, seed := range [][]tar.Header{
		{dir("db/"), reg("db/data", "rows"), reg("marker", "hello")},
		{reg("../outside/evil", "x")},
		{reg("/etc/evil", "x")},
		{reg("a/../../keep", "x")},
		{link("out", "../outside"), reg("out/evil", "x")},
		{link("keep-link", "../keep"), reg("keep-link", "overwritten")},
		{link("abs", "/"), reg("abs/tmp/evil", "x")},
		{dir("ro/"), reg("ro/f", "x"), {Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o500}},
		{{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o644}, {Name: "hard", Typeflag: tar.TypeLink, Linkname: "../keep"}},
	} {
		f.Add(tarOf(f, seed...), false)
	}
	f.Add(gzipOf(f, tarOf(f, reg("f", "x")))[:20], true) // truncated
	f.Add([]byte("not gzip"), true)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		archive := data
		if !compressed {
			archive = gzipOf(t, data)
		}
		base := t.TempDir()
		vol, outside, keep := filepath.Join(base, "vol"), filepath.Join(base, "outside"), filepath.Join(base, "keep")
		for _, d := range []string{vol, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Extract(bytes.NewReader(archive), vol)
		if err != nil && !strings.HasPrefix(err.Error(), "reading the archive: ") && !strings.HasPrefix(err.Error(), "archive entry \"") {
			t.Errorf("error %q is neither about the archive nor names an entry", err)
		}
		if err == nil && res.Size != int64(len(archive)) {
			t.Errorf("reported %d bytes read of a %d-byte archive", res.Size, len(archive))
		}
		checkUntouched(t, base, outside, keep)
	})
}

// checkUntouched fails the test if base holds anything but vol, an empty
// outside and keep as it was.
func checkUntouched(t *testing.T, base, outside, keep string) {
	t.Helper()
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"keep", "outside", "vol"}) {
		t.Errorf("beside the volume: %q, want keep, outside, vol", names)
	}
	if in, err := os.ReadDir(outside); err != nil || len(in) > 0 {
		t.Errorf("written outside the volume: %v %v", in, err)
	}
	if fi, err := os.Lstat(keep); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("a file outside the volume changed: %v %v", fi, err)
	}
	if data, err := os.ReadFile(keep); err != nil || string(data) != "keep" {
		t.Errorf("a file outside the volume changed: %q %v", data, err)
	}
}
