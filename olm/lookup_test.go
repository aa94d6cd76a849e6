package olm

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

func TestLookupBundleInConfig(t *testing.T) {
	dir := olmtest.Catalog(t,
		olmtest.Bundle{Package: "look", Version: "0.1.0", InstallModes: []string{"OwnNamespace"}},
		olmtest.Bundle{Package: "look", Version: "0.2.0", InstallModes: []string{"AllNamespaces", "SingleNamespace"}})
	cfg, err := fbc.LoadDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pkg, channel, startingCSV string
		wantCSV                         string
		wantModes                       string
		wantErr                         string
	}{
		{name: "head of the default channel", pkg: "look", wantCSV: "look.v0.2.0", wantModes: "SingleNamespace, AllNamespaces"},
		{name: "starting CSV", pkg: "look", startingCSV: "look.v0.1.0", wantCSV: "look.v0.1.0", wantModes: "OwnNamespace"},
		{name: "named channel", pkg: "look", channel: "stable", wantCSV: "look.v0.2.0", wantModes: "SingleNamespace, AllNamespaces"},
		{name: "missing package", pkg: "nope", wantErr: "package nope is not in the catalog"},
		{name: "missing channel", pkg: "look", channel: "fast", wantErr: "package look has no channel fast"},
		{name: "missing CSV", pkg: "look", startingCSV: "look.v9.0.0", wantErr: "channel stable of package look has no bundle look.v9.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := LookupBundleInConfig(cfg, tt.pkg, tt.channel, tt.startingCSV)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.CSV != tt.wantCSV || info.Channel != "stable" || describeModes(info.InstallModes) != tt.wantModes {
				t.Errorf("info = %+v (%s), want %s with %s", info, describeModes(info.InstallModes), tt.wantCSV, tt.wantModes)
			}
		})
	}
}

// The bundle a Subscription installs is found in the catalog its
// CatalogSource serves: a registry server, or a catalog image pulled from a
// registry (a real one on loopback).
func TestLookupSubscribed(t *testing.T) {
	dir := olmtest.Catalog(t,
		olmtest.Bundle{Package: "sub", Version: "0.1.0", InstallModes: []string{"OwnNamespace"}},
		olmtest.Bundle{Package: "sub", Version: "0.2.0", InstallModes: []string{"AllNamespaces"}})
	img, err := oci.BuildImage(t.Context(), oci.ImageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	image := strings.TrimPrefix(reg.URL, "http://") + "/sub/catalog:v1"
	if _, err := ociimage.Push(t.Context(), img, image); err != nil {
		t.Fatal(err)
	}
	address := olmtest.Serve(t, dir)
	tests := []struct {
		name      string
		opts      SubscribeOptions
		wantCSV   string
		wantModes string
		wantErr   string
	}{
		{name: "registry server", opts: SubscribeOptions{Package: "sub", CatalogAddress: address}, wantCSV: "sub.v0.2.0", wantModes: "AllNamespaces"},
		{name: "catalog image", opts: SubscribeOptions{Package: "sub", CatalogImage: image}, wantCSV: "sub.v0.2.0", wantModes: "AllNamespaces"},
		{name: "catalog image, starting CSV", opts: SubscribeOptions{Package: "sub", CatalogImage: image, StartingCSV: "sub.v0.1.0"}, wantCSV: "sub.v0.1.0", wantModes: "OwnNamespace"},
		{name: "catalog image without the package", opts: SubscribeOptions{Package: "nope", CatalogImage: image}, wantErr: "package nope is not in the catalog"},
		{name: "missing catalog image", opts: SubscribeOptions{Package: "sub", CatalogImage: strings.TrimPrefix(reg.URL, "http://") + "/sub/catalog:v9"}, wantErr: "/sub/catalog:v9"},
		{name: "no catalog", opts: SubscribeOptions{Package: "sub"}, wantErr: "no catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := LookupSubscribed(t.Context(), tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.CSV != tt.wantCSV || describeModes(info.InstallModes) != tt.wantModes {
				t.Errorf("info = %+v (%s), want %s with %s", info, describeModes(info.InstallModes), tt.wantCSV, tt.wantModes)
			}
		})
	}
}
