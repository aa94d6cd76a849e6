package validate

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// e is a channel entry: name, replaces, skipRange, skips.
var e = catalogtest.Entry

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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
				declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
					e("a.v1.0.0", "", ""),
					e("a.v1.1.0", "a.v1.0.0", ""),
					e("a.v1.2.0", "a.v1.0.0", "", "a.v1.1.0"),
				}},
			)},
		},
		{
			name: "two heads",
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "2.0.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "1.2.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0", "2.0.0"},
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
				catalogtest.Package("a", "stable", nil),
				catalogtest.Package("b", "stable", []string{"1.0.0", "1.1.0"},
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
			pkgs: []declcfg.DeclarativeConfig{catalogtest.Package("a", "beta", []string{"1.0.0"},
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
			dir := catalogtest.WriteCatalog(t, tt.pkgs...)
			err := FS(t.Context(), dir, os.DirFS(dir))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("valid catalog rejected:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid catalog accepted")
			}
			var verr *Error
			if !errors.As(err, &verr) {
				t.Fatalf("error is a %T, not a *Error: %v", err, err)
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
	dir := t.TempDir()
	err := FS(t.Context(), dir, os.DirFS(dir))
	if !errors.Is(err, ErrNoBundles) {
		t.Fatalf("error = %v", err)
	}
}
