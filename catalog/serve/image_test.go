package serve

import (
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

func TestImageOCILayoutPushPullServe(t *testing.T) {
	dir := serveTestCatalog(t)
	img, err := oci.BuildImage(t.Context(), oci.ImageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	// OCI layout: written, read back, same digest.
	layoutDir := filepath.Join(t.TempDir(), "oci")
	if err := ociimage.WriteOCILayout(img, layoutDir, "v1"); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := p.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	m, _ := idx.IndexManifest()
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("index manifests = %+v", m.Manifests)
	}

	// A real registry on loopback.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	ref := host + "/chartpilot/catalog:v1"
	pushed, err := ociimage.Push(t.Context(), back, ref)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != digest {
		t.Errorf("pushed digest %s, want %s", pushed, digest)
	}
	r, _ := name.ParseReference(ref)
	desc, err := remote.Head(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != digest {
		t.Errorf("registry holds %s, want %s", desc.Digest, digest)
	}

	// Pull it into a new directory: the same catalog, byte for byte.
	pulled := filepath.Join(t.TempDir(), "pulled")
	got, err := oci.PullImage(t.Context(), ref, pulled)
	if err != nil {
		t.Fatal(err)
	}
	if got != digest {
		t.Errorf("pulled digest %s, want %s", got, digest)
	}
	if a, b := snapshotFiles(t, dir), snapshotFiles(t, pulled); a != b {
		t.Errorf("pulled catalog differs:\n%s\nwant:\n%s", b, a)
	}

	// And it serves.
	conn := serveCatalog(t, pulled)
	b, err := api.NewRegistryClient(conn).GetBundleForChannel(t.Context(), &api.GetBundleInChannelRequest{PkgName: "w", ChannelName: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	if b.CsvName != "w.v2.0.0" {
		t.Errorf("head = %s", b.CsvName)
	}

	// Serving the image straight from the registry.
	s, err := NewServer(t.Context(), Options{Image: ref, Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Digest != digest.String() {
		t.Errorf("served digest %s, want %s", s.Digest, digest)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}

	// Pulling into an existing directory is refused; a non-catalog image too.
	if _, err := oci.PullImage(t.Context(), ref, pulled); !errors.Is(err, os.ErrExist) {
		t.Errorf("pull into an existing directory: %v", err)
	}
	if _, err := oci.PullImage(t.Context(), host+"/nothing:here", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "NAME_UNKNOWN") {
		t.Errorf("pulling a missing image: %v", err)
	}
}

// snapshotFiles lists relative paths and contents of the regular files.
func snapshotFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "\n" + string(data) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
