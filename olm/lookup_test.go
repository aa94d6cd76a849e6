package olm

import (
	"context"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/catalog"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

func TestLookupBundleInConfig(t *testing.T) {
	dir := olmtest.Catalog(t,
		olmtest.Bundle{Package: "look", Version: "0.1.0", InstallModes: []string{"OwnNamespace"}},
		olmtest.Bundle{Package: "look", Version: "0.2.0", InstallModes: []string{"AllNamespaces", "SingleNamespace"}})
	cfg, err := catalog.LoadDir(context.Background(), dir)
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
