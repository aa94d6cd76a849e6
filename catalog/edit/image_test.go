package edit

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

func TestAddBundleImage(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")

	// A bundle image as operator-sdk builds it: manifests/ and metadata/ at the root.
	ref := catalogtest.PushBundleImage(t, host, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "stable"})

	dir := initPackage(t, "w")
	res, err := Add(t.Context(), AddOptions{Dir: dir, BundleImage: ref})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bundle != "w.v1.0.0" || res.Inline {
		t.Errorf("result = %+v", res)
	}
	pf, err := loadPackage(dir, "w")
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.cfg.Bundles[0].Image; got != ref {
		t.Errorf("bundle image = %q, want %q", got, ref)
	}

	before := snapshot(t, dir)
	if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleImage: host + "/missing:v1"}); err == nil || !strings.Contains(err.Error(), "NAME_UNKNOWN") {
		t.Errorf("adding a missing image: %v", err)
	}
	if snapshot(t, dir) != before {
		t.Error("a failed add changed the catalog")
	}
}
