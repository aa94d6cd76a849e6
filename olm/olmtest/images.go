package olmtest

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// Registry starts an image registry on a loopback port for the rest of t
// and returns its host:port. Pushes and pulls speak plain HTTP to it, and
// so does the local cluster's OLM v1 (see cluster's registries.conf).
func Registry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// BundleRef is where PushBundle pushes a bundle's image.
func (b Bundle) BundleRef(registry string) string {
	return registry + "/" + b.Package + "-bundle:v" + b.Version
}

// PushBundle builds the bundle's image and pushes it to the registry;
// edit, when set, changes the bundle directory first. It returns the
// directory and the image's reference.
func PushBundle(t testing.TB, registry string, b Bundle, edit func(dir string)) (dir, ref string) {
	t.Helper()
	dir = b.Write(t)
	if edit != nil {
		edit(dir)
	}
	img, err := bundle.BuildImage(dir)
	if err != nil {
		t.Fatalf("building the bundle image of %s: %v", b.CSVName(), err)
	}
	ref = b.BundleRef(registry)
	if _, err := ociimage.Push(context.Background(), img, ref); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return dir, ref
}

// ImageBundle is a bundle pushed as an image, for an image-based catalog.
type ImageBundle struct {
	Dir, Ref string
}

// PushCatalog writes a catalog directory holding the bundles, published
// by image (OLM v1 installs nothing else), builds its catalog image and
// pushes it as ref. Every bundle must be of the same package.
// AllowUnsafeAPIChanges lets a test publish a bundle whose CRDs break the
// previous ones'.
func PushCatalog(t testing.TB, ref string, allowUnsafe bool, bundles ...ImageBundle) string {
	t.Helper()
	return PushCatalogDir(t, ref, WriteCatalog(t, allowUnsafe, bundles...))
}

// WriteCatalog writes a file-based catalog of the bundles (the first
// starts it) into a temporary directory, for a test to change before
// PushCatalogDir.
func WriteCatalog(t testing.TB, allowUnsafe bool, bundles ...ImageBundle) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: dir, FromBundle: bundles[0].Dir}); err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: b.Dir, Image: b.Ref, AllowUnsafeAPIChanges: allowUnsafe}); err != nil {
			t.Fatalf("adding %s to the catalog: %v", b.Ref, err)
		}
	}
	return dir
}

// PushCatalogDir builds the catalog image of a catalog directory and
// pushes it as ref.
func PushCatalogDir(t testing.TB, ref, dir string) string {
	t.Helper()
	img, err := oci.BuildImage(context.Background(), oci.ImageOptions{Dir: dir, NoCache: true})
	if err != nil {
		t.Fatalf("building the catalog image: %v", err)
	}
	if _, err := ociimage.Push(context.Background(), img, ref); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref
}
