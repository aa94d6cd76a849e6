package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestTarIsReproducible(t *testing.T) {
	fsys := fstest.MapFS{"b/c.txt": {Data: []byte("c")}, "a.txt": {Data: []byte("a")}}
	one, err := TarDir(fsys, "root/dir")
	if err != nil {
		t.Fatal(err)
	}
	two, err := Tar([]Entry{{Name: "root/dir/b/c.txt", Data: []byte("c")}, {Name: "/root/dir/a.txt", Data: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, two) {
		t.Error("the same tree gave two archives")
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(one))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.IsZero() && h.ModTime.Unix() != 0 || h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s: time %v owner %d %q", h.Name, h.ModTime, h.Uid, h.Uname)
		}
		names = append(names, h.Name)
	}
	if got := strings.Join(names, " "); got != "root/ root/dir/ root/dir/a.txt root/dir/b/ root/dir/b/c.txt" {
		t.Errorf("order: %s", got)
	}
	if _, err := Tar([]Entry{{Name: "x", Data: []byte("1")}, {Name: "x", Data: []byte("2")}}); err == nil {
		t.Error("a file given twice was archived")
	}
}

func TestStore(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	build := func(content string) v1.Image {
		layer, err := Tar([]Entry{{Name: "f", Data: []byte(content)}})
		if err != nil {
			t.Fatal(err)
		}
		img, err := Scratch([][]byte{layer}, Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	s := Store{Dir: filepath.Join(t.TempDir(), "images")}
	ref := host + "/op:v1"
	if _, err := s.Get(ref); !errors.Is(err, ErrNotInStore) {
		t.Fatalf("empty store: %v", err)
	}
	old, img := build("old"), build("new")
	for _, i := range []v1.Image{old, img} {
		if err := s.Put(i, ref); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if d, _ := got.(v1.Image).Digest(); d != want {
		t.Errorf("stored %s, want the latest build %s", d, want)
	}
	if _, err := s.Get(host + "/other:v1"); !errors.Is(err, ErrNotInStore) {
		t.Errorf("unknown reference: %v", err)
	}
	// The replaced build's blobs are gone; the other image's stay.
	other := build("other")
	if err := s.Put(other, host+"/other:v1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(img, ref); err != nil { // a rebuild that changes nothing
		t.Fatal(err)
	}
	blobs := func() map[string]bool {
		entries, err := os.ReadDir(filepath.Join(s.Dir, "blobs", "sha256"))
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, e := range entries {
			set[e.Name()] = true
		}
		return set
	}()
	for name, i := range map[string]v1.Image{"replaced": old, "stored": img, "other": other} {
		d, _ := i.Digest()
		layers, _ := i.Layers()
		ld, _ := layers[0].Digest()
		if blobs[d.Hex] != (name != "replaced") || blobs[ld.Hex] != (name != "replaced") {
			t.Errorf("%s image: manifest blob kept %v, layer blob kept %v", name, blobs[d.Hex], blobs[ld.Hex])
		}
	}
	pushed, err := s.Push(t.Context(), ref)
	if err != nil || pushed != want {
		t.Fatalf("push: %s %v", pushed, err)
	}
	resolved, err := Resolve(t.Context(), ref)
	if err != nil || resolved != want {
		t.Errorf("resolve: %s %v, want %s", resolved, err, want)
	}
	pulled, err := Pull(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := ExtractDir(pulled, "", dir); err != nil {
		t.Fatal(err)
	}
}

func TestIsReference(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("example.com/op", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg  string
		want bool
	}{
		{"quay.io/me/op-bundle:v0.1.0", true},
		{"127.0.0.1:5000/op@sha256:" + strings.Repeat("a", 64), true},
		{"localhost:5000/op:v1", true},
		{"quay.io/me/op", false},  // no tag or digest
		{"me/op:v1", false},       // no registry
		{"example.com/op", false}, // an existing directory wins
		{"bundle", false},
		{"op:v1", false},
		{"./bundle", false},
		{"Not Valid/op", false},
	}
	for _, tt := range tests {
		if got := IsReference(tt.arg); got != tt.want {
			t.Errorf("IsReference(%q) = %v, want %v", tt.arg, got, tt.want)
		}
	}
}
