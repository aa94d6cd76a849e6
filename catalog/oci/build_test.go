package oci

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// Build publishes the bundle images in order (a new package initialized
// from the first, a version already there replaced), then builds the image
// of the catalog they made; a bundle that cannot be published is named.
func TestBuild(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	v1ref := catalogtest.PushBundleImage(t, host, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "stable"})
	v2ref := catalogtest.PushBundleImage(t, host, catalogtest.BundleSpec{Pkg: "w", Version: "2.0.0", Channels: "stable"})

	dir := filepath.Join(t.TempDir(), "catalog")
	// Without the serving cache, whose layer differs between builds.
	opts := ImageOptions{Dir: dir, NoCache: true}
	res, err := Build(t.Context(), BuildOptions{ImageOptions: opts, Bundles: []string{v1ref, v2ref, v1ref}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Published {
		got = append(got, p.Bundle+" replaced:"+p.Replaced)
	}
	if want := []string{"w.v1.0.0 replaced:", "w.v2.0.0 replaced:", "w.v1.0.0 replaced:w.v1.0.0"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("published %v, want %v", got, want)
	}
	img, err := BuildImage(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d != res.Digest {
		t.Errorf("digest %s, want the catalog image's %s", res.Digest, d)
	}
	if d, _ := res.Image.Digest(); d != res.Digest {
		t.Errorf("image digest %s, result's %s", d, res.Digest)
	}

	missing := host + "/missing:v1"
	if _, err := Build(t.Context(), BuildOptions{ImageOptions: opts, Bundles: []string{missing}}); err == nil || !strings.Contains(err.Error(), "publishing "+missing+": ") {
		t.Errorf("building with a missing bundle image: %v, want the image named", err)
	}
}
