package extension

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// testCatalog: demo 0.1.0 -> 0.2.0 -> 0.3.0 in stable (0.3.0 skips 0.1.0
// too), 0.4.0 alone in fast with a skipRange over <0.4.0, and 1.0.0 in
// candidate, replacing nothing.
func testCatalog() *declcfg.DeclarativeConfig {
	bundle := func(v string) declcfg.Bundle {
		pkg, _ := json.Marshal(property.Package{PackageName: "demo", Version: v})
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: "demo.v" + v, Package: "demo", Image: "reg/demo-bundle:v" + v,
			Properties: []property.Property{{Type: property.TypePackage, Value: pkg}}}
	}
	return &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "demo", DefaultChannel: "stable"}, {Schema: declcfg.SchemaPackage, Name: "other"}},
		Channels: []declcfg.Channel{
			{Schema: declcfg.SchemaChannel, Name: "stable", Package: "demo", Entries: []declcfg.ChannelEntry{
				{Name: "demo.v0.1.0"}, {Name: "demo.v0.2.0", Replaces: "demo.v0.1.0"}, {Name: "demo.v0.3.0", Replaces: "demo.v0.2.0", Skips: []string{"demo.v0.1.0"}},
			}},
			{Schema: declcfg.SchemaChannel, Name: "fast", Package: "demo", Entries: []declcfg.ChannelEntry{{Name: "demo.v0.4.0", SkipRange: "<0.4.0"}}},
			{Schema: declcfg.SchemaChannel, Name: "candidate", Package: "demo", Entries: []declcfg.ChannelEntry{{Name: "demo.v1.0.0"}}},
		},
		Bundles: []declcfg.Bundle{bundle("0.1.0"), bundle("0.2.0"), bundle("0.3.0"), bundle("0.4.0"), bundle("1.0.0")},
	}
}

func TestResolve(t *testing.T) {
	installed := func(v string) *BundleMetadata { return &BundleMetadata{Name: "demo.v" + v, Version: v} }
	tests := []struct {
		name string
		sel  Selection
		want string
		// wantErr is in the error; errIs is the error it wraps.
		wantErr string
		errIs   error
	}{
		{name: "the highest version of any channel", sel: Selection{Package: "demo"}, want: "1.0.0"},
		{name: "within channels", sel: Selection{Package: "demo", Channels: []string{"stable"}}, want: "0.3.0"},
		{name: "within a range", sel: Selection{Package: "demo", Version: "0.2.x"}, want: "0.2.0"},
		{name: "a range and channels", sel: Selection{Package: "demo", Version: "<1.0.0", Channels: []string{"stable", "fast"}}, want: "0.4.0"},
		{name: "an upgrade follows replaces and skips", sel: Selection{Package: "demo", Channels: []string{"stable"}, Installed: installed("0.1.0")}, want: "0.3.0"},
		{name: "an upgrade follows a skipRange", sel: Selection{Package: "demo", Installed: installed("0.2.0"), Version: "<1.0.0"}, want: "0.4.0"},
		{name: "no edge to 1.0.0: the installed one stays", sel: Selection{Package: "demo", Installed: installed("0.4.0")}, want: "0.4.0"},
		{name: "SelfCertified goes anywhere", sel: Selection{Package: "demo", Installed: installed("0.4.0"), Policy: UpgradeSelfCertified}, want: "1.0.0"},
		{name: "a range nothing satisfies lists the versions", sel: Selection{Package: "demo", Version: ">=2.0.0"}, errIs: ErrNoBundleMatches,
			wantErr: `package demo has no bundle in version range ">=2.0.0"; its versions: 0.1.0 (stable), 0.2.0 (stable), 0.3.0 (stable), 0.4.0 (fast), 1.0.0 (candidate)`},
		{name: "a channel that does not hold the range", sel: Selection{Package: "demo", Version: "1.x", Channels: []string{"stable"}}, errIs: ErrNoBundleMatches,
			wantErr: `no bundle in channels stable and in version range "1.x"`},
		{name: "no upgrade edge in range", sel: Selection{Package: "demo", Installed: installed("0.4.0"), Version: ">=1.0.0"}, errIs: ErrNoBundleMatches,
			wantErr: "that upgrades from the installed 0.4.0"},
		{name: "an unknown package lists the packages", sel: Selection{Package: "nope"}, errIs: ErrPackageNotFound,
			wantErr: `the catalog has no package "nope"; its packages: demo, other`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Resolve(testCatalog(), tt.sel)
			if tt.errIs != nil {
				if !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %v with %q", err, tt.errIs, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Version != tt.want || b.Name != "demo.v"+tt.want || b.Image != "reg/demo-bundle:v"+tt.want {
				t.Errorf("resolved %+v, want %s", b, tt.want)
			}
		})
	}
}
