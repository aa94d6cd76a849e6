package catalog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// testPackage builds an image-based package: bundles p.v<version> for each
// version, and the given channels.
func testPackage(pkg, defaultChannel string, versions []string, channels ...declcfg.Channel) declcfg.DeclarativeConfig {
	cfg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: defaultChannel}}}
	for _, v := range versions {
		cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{
			Schema:     declcfg.SchemaBundle,
			Name:       pkg + ".v" + v,
			Package:    pkg,
			Image:      "registry.example.com/" + pkg + "-bundle:v" + v,
			Properties: []property.Property{property.MustBuildPackage(pkg, v)},
		})
	}
	for _, ch := range channels {
		ch.Schema, ch.Package = declcfg.SchemaChannel, pkg
		cfg.Channels = append(cfg.Channels, ch)
	}
	return cfg
}

// e is a channel entry: name, replaces, skipRange, skips.
func e(name, replaces, skipRange string, skips ...string) declcfg.ChannelEntry {
	return declcfg.ChannelEntry{Name: name, Replaces: replaces, SkipRange: skipRange, Skips: skips}
}

// writeCatalog writes each package to <dir>/<package>/catalog.yaml.
func writeCatalog(t *testing.T, pkgs ...declcfg.DeclarativeConfig) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pkgs {
		var buf bytes.Buffer
		if err := declcfg.WriteYAML(p, &buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, p.Packages[0].Name, "catalog.yaml")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		pkgs []declcfg.DeclarativeConfig
		// want is the whole error tree below the catalog line; empty means valid.
		want string
		// wantIs are sentinels the error must wrap.
		wantIs []error
	}{
		{
			name: "valid: semver chain with skipRanges, two channels",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", ">=1.0.0 <1.1.0"),
					e("a.v2.0.0", "a.v1.1.0", ">=1.0.0 <2.0.0"),
				}},
				declcfg.Channel{Name: "fast", Entries: []declcfg.ChannelEntry{e("a.v2.0.0", "a.v1.1.0", "")}},
			)},
		},
		{
			name: "valid: skips that leave no one behind",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", ""),
					e("a.v1.2.0", "a.v1.0.0", "", "a.v1.1.0"),
				}},
			)},
		},
		{
			name: "two heads",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", ""),
					e("a.v1.2.0", "a.v1.0.0", ""),
				}},
			)},
			want: `└── package "a":
    ├── operator-registry validation failed:
    │   └── invalid package "a":
    │       └── invalid channel "stable":
    │           └── multiple channel heads found in graph: a.v1.1.0, a.v1.2.0
    └── channel "stable":
        └── a channel needs exactly one head: found 2 (a.v1.1.0, a.v1.2.0); all but the newest should be replaced or skipped`,
			wantIs: []error{ErrHeads, ErrModel},
		},
		{
			name: "a loop strands its bundles",
			// 2.0.0 is the only head; 1.1.0 and 1.2.0 replace each other.
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.2.0", ""),
					e("a.v1.2.0", "a.v1.1.0", ""),
					e("a.v2.0.0", "a.v1.0.0", ""),
				}},
			)},
			want: `└── package "a":
    ├── operator-registry validation failed:
    │   └── invalid package "a":
    │       └── invalid channel "stable":
    │           └── channel contains one or more stranded bundles: a.v1.1.0, a.v1.2.0
    └── channel "stable":
        ├── bundle "a.v1.1.0" (1.1.0) replaces "a.v1.2.0" (1.2.0): upgrade edge to an older version; its users would be offered a downgrade
        ├── bundle "a.v1.1.0": stranded bundle: its upgrades (a.v1.2.0) never lead to the head "a.v2.0.0"
        └── bundle "a.v1.2.0": stranded bundle: its upgrades (a.v1.1.0) never lead to the head "a.v2.0.0"`,
			wantIs: []error{ErrStranded, ErrDowngrade, ErrModel},
		},
		{
			name: "a bundle replacing itself is stranded",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "2.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "a.v1.0.0", ""),
					e("a.v2.0.0", "", ""),
				}},
			)},
			want: `└── package "a":
    ├── operator-registry validation failed:
    │   └── invalid package "a":
    │       └── invalid channel "stable":
    │           └── channel contains one or more stranded bundles: a.v1.0.0
    └── channel "stable":
        └── bundle "a.v1.0.0": stranded bundle: no other bundle in the channel replaces, skips or skipRanges it, so its users never get an upgrade`,
			wantIs: []error{ErrStranded},
		},
		{
			name: "skip strands the users of the bundle before it",
			// 1.2.0 skips 1.1.0 and replaces it; users of 1.0.0 could only
			// move to 1.1.0, which OLM no longer offers.
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", ""),
					e("a.v1.2.0", "a.v1.1.0", "", "a.v1.1.0"),
				}},
			)},
			want: `└── package "a":
    ├── operator-registry validation failed:
    │   └── invalid package "a":
    │       └── invalid channel "stable":
    │           └── channel contains one or more stranded bundles: a.v1.0.0
    └── channel "stable":
        └── bundle "a.v1.0.0": skips strand users: every upgrade from it leads to a skipped bundle: a.v1.1.0 (skipped by a.v1.2.0)`,
			wantIs: []error{ErrStrandingSkip, ErrModel},
		},
		{
			name: "skip of a newer version",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", "", "a.v2.0.0"),
					e("a.v2.0.0", "a.v1.1.0", ">=1.0.0 <2.0.0"),
				}},
			)},
			want: `└── package "a":
    ├── operator-registry validation failed:
    │   └── invalid package "a":
    │       └── invalid channel "stable":
    │           └── no channel head found in graph
    └── channel "stable":
        ├── bundle "a.v1.1.0" (1.1.0) skips "a.v2.0.0" (2.0.0): upgrade edge to an older version; its users would be offered a downgrade
        └── a channel needs exactly one head: found none, every bundle is replaced or skipped by another (a cycle)`,
			wantIs: []error{ErrDowngrade, ErrHeads},
		},
		{
			name: "replaces a newer version and a stranded dead end",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "a.v1.1.0", ""),
					e("a.v1.1.0", "", ""),
					e("a.v2.0.0", "a.v1.0.0", "", "a.v1.1.0"),
				}},
			)},
			want: `└── package "a":
    └── channel "stable":
        └── bundle "a.v1.0.0" (1.0.0) replaces "a.v1.1.0" (1.1.0): upgrade edge to an older version; its users would be offered a downgrade`,
			wantIs: []error{ErrDowngrade},
		},
		{
			name: "errors in several packages and channels are all reported",
			pkgs: []declcfg.DeclarativeConfig{
				testPackage("a", "stable", nil),
				testPackage("b", "stable", []string{"1.0.0", "1.1.0"},
					declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{e("b.v1.0.0", "", ""), e("b.v1.1.0", "b.v1.0.0", "")}},
					declcfg.Channel{Name: "fast", Entries: []declcfg.ChannelEntry{e("b.v1.0.0", "", ""), e("b.v1.1.0", "", "")}},
				),
			},
			want: `├── package "a":
│   └── no bundles: add one with ` + "`chartpilot catalog add`" + `
└── package "b":
    ├── operator-registry validation failed:
    │   └── invalid package "b":
    │       └── invalid channel "fast":
    │           └── multiple channel heads found in graph: b.v1.0.0, b.v1.1.0
    └── channel "fast":
        └── a channel needs exactly one head: found 2 (b.v1.0.0, b.v1.1.0); all but the newest should be replaced or skipped`,
			wantIs: []error{ErrNoBundles, ErrHeads},
		},
		{
			name: "operator-registry structural errors",
			pkgs: []declcfg.DeclarativeConfig{testPackage("a", "beta", []string{"1.0.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{e("a.v1.0.0", "", "")}},
			)},
			want: `└── package "a":
    └── operator-registry validation failed:
        └── invalid package "a":
            └── invalid channel "beta":
                └── channel must contain at least one bundle`,
			wantIs: []error{ErrModel},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeCatalog(t, tt.pkgs...)
			err := Validate(t.Context(), ValidateOptions{Dir: dir})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("valid catalog rejected:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid catalog accepted")
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error is a %T, not a *ValidationError: %v", err, err)
			}
			got := strings.SplitN(err.Error(), "\n", 2)
			if got[0] != `catalog "`+dir+`":` {
				t.Errorf("root = %q", got[0])
			}
			if len(got) < 2 || got[1] != tt.want {
				t.Errorf("error tree:\n%s\nwant:\n%s", got[len(got)-1], tt.want)
			}
			for _, s := range tt.wantIs {
				if !errors.Is(err, s) {
					t.Errorf("error does not wrap %v", s)
				}
			}
		})
	}
}

func TestValidateEmptyCatalog(t *testing.T) {
	err := Validate(t.Context(), ValidateOptions{Dir: t.TempDir()})
	if !errors.Is(err, ErrNoBundles) {
		t.Fatalf("error = %v", err)
	}
}
