package edit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// entriesOf reads the package file back and returns a channel's entries
// as "name replaces=... skipRange=..." lines.
func entriesOf(t *testing.T, dir, pkg, channel string) []string {
	t.Helper()
	pf, err := loadPackage(dir, pkg)
	if err != nil {
		t.Fatal(err)
	}
	ch := findChannel(&pf.cfg, channel)
	if ch == nil {
		t.Fatalf("no channel %q", channel)
	}
	var out []string
	for _, e := range ch.Entries {
		out = append(out, strings.TrimSpace(e.Name+" "+strings.Join(nonEmpty("replaces="+e.Replaces, "skipRange="+e.SkipRange), " ")))
	}
	return out
}

func nonEmpty(kv ...string) []string {
	var out []string
	for _, s := range kv {
		if !strings.HasSuffix(s, "=") {
			out = append(out, s)
		}
	}
	return out
}

func TestAddPlacesBySemver(t *testing.T) {
	tests := []struct {
		name string
		// versions are added in this order
		versions []string
		want     []string
	}{
		{
			name:     "first bundle",
			versions: []string{"1.0.0"},
			want:     []string{"w.v1.0.0"},
		},
		{
			name:     "in order",
			versions: []string{"1.0.0", "1.1.0", "2.0.0"},
			want: []string{
				"w.v1.0.0",
				"w.v1.1.0 replaces=w.v1.0.0 skipRange=>=1.0.0 <1.1.0",
				"w.v2.0.0 replaces=w.v1.1.0 skipRange=>=1.0.0 <2.0.0",
			},
		},
		{
			name:     "an older patch release lands between",
			versions: []string{"1.0.0", "1.1.0", "1.0.1"},
			want: []string{
				"w.v1.0.0",
				"w.v1.0.1 replaces=w.v1.0.0 skipRange=>=1.0.0 <1.0.1",
				"w.v1.1.0 replaces=w.v1.0.1 skipRange=>=1.0.0 <1.1.0",
			},
		},
		{
			name:     "a version older than all becomes the tail",
			versions: []string{"1.0.0", "0.9.0"},
			want: []string{
				"w.v0.9.0",
				"w.v1.0.0 replaces=w.v0.9.0 skipRange=>=0.9.0 <1.0.0",
			},
		},
		{
			name:     "semver order, not string order, with a prerelease",
			versions: []string{"1.10.0", "1.9.0", "1.10.0-rc.1"},
			want: []string{
				"w.v1.9.0",
				"w.v1.10.0-rc.1 replaces=w.v1.9.0 skipRange=>=1.9.0 <1.10.0-rc.1",
				"w.v1.10.0 replaces=w.v1.10.0-rc.1 skipRange=>=1.9.0 <1.10.0",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", tt.versions...)
			if got := entriesOf(t, dir, "w", "stable"); !slices.Equal(got, tt.want) {
				t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
				t.Errorf("placed catalog does not validate: %v", err)
			}
		})
	}
}

func TestAddResultAndPackageDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := Init(t.Context(), InitOptions{Dir: dir, Package: "w"}); err != nil {
		t.Fatal(err)
	}
	addVersions(t, dir, "w", "alpha,stable", "1.0.0")
	res, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "1.1.0", Channels: "alpha,stable", DefaultChannel: "stable"})})
	if err != nil {
		t.Fatal(err)
	}
	want := []Placement{
		{Channel: "alpha", Replaces: "w.v1.0.0", SkipRange: ">=1.0.0 <1.1.0", Head: true},
		{Channel: "stable", Replaces: "w.v1.0.0", SkipRange: ">=1.0.0 <1.1.0", Head: true},
	}
	if res.Bundle != "w.v1.1.0" || res.Version != "1.1.0" || !res.Inline || res.Replaced != "" || !slices.Equal(res.Placements, want) {
		t.Errorf("result = %+v", res)
	}
	pf, err := loadPackage(dir, "w")
	if err != nil {
		t.Fatal(err)
	}
	// The first bundle named no default channel: its first channel became it.
	if p := pf.pkg(); p.DefaultChannel != "alpha" || p.Description != "The w operator manages widgets." || p.Icon == nil {
		t.Errorf("package = %+v", p)
	}
}

func TestAddChannelOverridesAndScope(t *testing.T) {
	tests := []struct {
		name     string
		channels []string
		scope    ChannelScope
		version  string
		want     []string
	}{
		{name: "annotations", version: "1.2.3", want: []string{"stable"}},
		{name: "override", channels: []string{"fast", "candidate"}, version: "1.2.3", want: []string{"candidate", "fast"}},
		{name: "per major", scope: ScopeMajor, version: "1.2.3", want: []string{"stable-v1"}},
		{name: "per minor", channels: []string{"fast"}, scope: ScopeMinor, version: "1.2.3", want: []string{"fast-v1.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: tt.version, Channels: "stable"}), Channels: tt.channels, Scope: tt.scope}); err != nil {
				t.Fatal(err)
			}
			pf, err := loadPackage(dir, "w")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range pf.cfg.Channels {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("channels = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAddExistingVersion(t *testing.T) {
	tests := []struct {
		name    string
		spec    catalogtest.BundleSpec
		replace bool
		image   string
		wantErr error
		// want are the stable entries afterwards
		want []string
	}{
		{
			name:    "same version refused",
			spec:    catalogtest.BundleSpec{Pkg: "w", Version: "1.1.0", Channels: "stable"},
			wantErr: ErrBundleExists,
		},
		{
			name:    "same version under another name refused",
			spec:    catalogtest.BundleSpec{Pkg: "w", Version: "1.1.0", Channels: "stable", Name: "w.v1.1.0-rebuilt"},
			wantErr: ErrBundleExists,
		},
		{
			name:    "same name with another version refused",
			spec:    catalogtest.BundleSpec{Pkg: "w", Version: "1.1.1", Channels: "stable", Name: "w.v1.1.0"},
			wantErr: ErrBundleExists,
		},
		{
			name:    "replace swaps the bundle in place",
			spec:    catalogtest.BundleSpec{Pkg: "w", Version: "1.1.0", Channels: "stable"},
			replace: true,
			image:   "registry.example.com/w-bundle:v1.1.0",
			want: []string{
				"w.v1.0.0",
				"w.v1.1.0 replaces=w.v1.0.0 skipRange=>=1.0.0 <1.1.0",
				"w.v2.0.0 replaces=w.v1.1.0 skipRange=>=1.0.0 <2.0.0",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", "1.0.0", "1.1.0", "2.0.0")
			before := snapshot(t, dir)
			res, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, tt.spec), Replace: tt.replace, Image: tt.image})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if after := snapshot(t, dir); after != before {
					t.Errorf("a refused add changed the catalog")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Replaced != "w.v1.1.0" || res.Inline {
				t.Errorf("result = %+v", res)
			}
			if got := entriesOf(t, dir, "w", "stable"); !slices.Equal(got, tt.want) {
				t.Errorf("entries = %q, want %q", got, tt.want)
			}
			pf, _ := loadPackage(dir, "w")
			for _, b := range pf.cfg.Bundles {
				if b.Name == "w.v1.1.0" && b.Image != tt.image {
					t.Errorf("replaced bundle image = %q, want %q", b.Image, tt.image)
				}
			}
		})
	}
}

// A failed add leaves the catalog directory byte for byte as it was: same
// files, same content, same modes, same modification times.
func TestFailedAddLeavesCatalogUntouched(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the options of the failing add
		setup   func(t *testing.T, dir string) AddOptions
		wantErr string
	}{
		{
			name: "invalid bundle",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable", NoCSV: true})}
			},
			wantErr: "holds no ClusterServiceVersion",
		},
		{
			name: "another package's file does not load",
			setup: func(t *testing.T, dir string) AddOptions {
				catalogtest.WriteFile(t, filepath.Join(dir, "other", "catalog.yaml"), "schema: olm.package\nname: other\n---\nschema: olm.channel\nentries: {\n")
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"})}
			},
			wantErr: "catalog does not load: " + "%DIR%: other/catalog.yaml: ",
		},
		{
			name: "a CSV version that is not semver",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "0.3", Channels: "stable"})}
			},
			wantErr: `ClusterServiceVersion w.v0.3: spec.version: version "0.3" is not semver: it has 2 number(s) where three are wanted; want ` + registryv1.VersionRule,
		},
		{
			name: "a bundle directory that does not exist",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: filepath.Join(filepath.Dir(dir), "bundel")}
			},
			wantErr: "no bundle directory: %PARENT%/bundel does not exist",
		},
		{
			name: "the version is there",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "2.0.0", Channels: "stable"})}
			},
			wantErr: `package "w" already has w.v2.0.0 (version 2.0.0); pass --replace to overwrite it`,
		},
		{
			name: "a channel name with a space: the rule bundle generate applies",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, Channels: []string{"Stable Channel"}, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"})}
			},
			wantErr: `--channels: invalid channel name "Stable Channel": a lowercase RFC 1123 subdomain`,
		},
		{
			name: "an upper-case channel in the bundle's annotations",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "Stable"})}
			},
			wantErr: `bundle w.v3.0.0's operators.operatorframework.io.bundle.channels.v1: invalid channel name "Stable"`,
		},
		{
			name: "package not initialized",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "other", Version: "1.0.0", Channels: "stable"})}
			},
			wantErr: `package not found in catalog: "other"`,
		},
		{
			name: "existing version",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "stable"})}
			},
			wantErr: "bundle already in catalog",
		},
		{
			name: "invalid image reference fails validation",
			setup: func(t *testing.T, dir string) AddOptions {
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"}), Image: "Not A Valid/Image:::"}
			},
			wantErr: "invalid image pull spec",
		},
		{
			name: "a hand-edited skip in the catalog makes the new graph invalid",
			setup: func(t *testing.T, dir string) AddOptions {
				// 1.1.0 skips 2.0.0; adding 3.0.0 keeps that skip.
				pf, err := loadPackage(dir, "w")
				if err != nil {
					t.Fatal(err)
				}
				ch := findChannel(&pf.cfg, "stable")
				ch.Entries[1].Skips = []string{"w.v2.0.0"}
				if err := pf.save(); err != nil {
					t.Fatal(err)
				}
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"})}
			},
			wantErr: `bundle "w.v1.1.0" (1.1.0) skips "w.v2.0.0" (2.0.0): upgrade edge to an older version`,
		},
		{
			name: "the default channel would stay empty",
			setup: func(t *testing.T, dir string) AddOptions {
				if err := Init(t.Context(), InitOptions{Dir: dir, Package: "v", DefaultChannel: "stable"}); err != nil {
					t.Fatal(err)
				}
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "v", Version: "1.0.0", Channels: "fast"})}
			},
			wantErr: `default channel empty: the package's default channel "stable" would hold no bundle; place v.v1.0.0 in it too (channels) or choose another default channel`,
		},
		{
			name: "the write fails",
			setup: func(t *testing.T, dir string) AddOptions {
				// A real failing write: a file cannot hold a directory.
				writeFile := func(p string, data []byte, perm os.FileMode) error {
					return atomicfile.WriteFile(filepath.Join(p, "below-a-file"), data, perm)
				}
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"}), writeFile: writeFile}
			},
			wantErr: "not a directory",
		},
		{
			name: "unwritable package file",
			setup: func(t *testing.T, _ string) AddOptions {
				// Permissions do not stop root; a path does: the package
				// file's path fits in PATH_MAX, its temporary file's does not.
				if runtime.GOOS != "linux" {
					t.Skip("PATH_MAX is 4096 on Linux")
				}
				// Written under a shorter name, whose temporary files fit.
				dir := pathOfLength(t, linuxPathMax-1-len("/w/catalog.yaml"))
				short := filepath.Join(filepath.Dir(dir), "c")
				if err := Init(t.Context(), InitOptions{Dir: short, Package: "w"}); err != nil {
					t.Fatal(err)
				}
				addVersions(t, short, "w", "stable", "1.0.0")
				if err := os.Rename(short, dir); err != nil {
					t.Fatal(err)
				}
				return AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "3.0.0", Channels: "stable"})}
			},
			// The temporary file is built beside the catalog (stagingPath).
			wantErr: "writing %DIR%/w/catalog.yaml: open %STAGING%/.catalog.yaml.tmp-",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", "1.0.0", "1.1.0", "2.0.0")
			opts := tt.setup(t, dir)
			dir = opts.Dir
			before := snapshot(t, dir)
			_, err := Add(t.Context(), opts)
			staging, _ := stagingPath(dir)
			tt.wantErr = strings.NewReplacer("%DIR%", dir, "%PARENT%", filepath.Dir(dir), "%STAGING%", staging).Replace(tt.wantErr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("the failed add changed the catalog:\nbefore:\n%.2000s\nafter:\n%.2000s", before, after)
			}
		})
	}
}

func TestInit(t *testing.T) {
	tests := []struct {
		name    string
		opts    func(t *testing.T, dir string) InitOptions
		wantErr string
		// want are lines expected in the package file
		want []string
		file string
	}{
		{
			name: "from flags",
			opts: func(t *testing.T, dir string) InitOptions {
				return InitOptions{Dir: dir, Package: "w", DefaultChannel: "stable", Description: "Widgets."}
			},
			file: "w/catalog.yaml",
			want: []string{"schema: olm.package", "name: w", "defaultChannel: stable", "description: Widgets."},
		},
		{
			name: "from a bundle",
			opts: func(t *testing.T, dir string) InitOptions {
				return InitOptions{Dir: dir, FromBundle: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "1.0.0", Channels: "fast,stable", DefaultChannel: "stable"})}
			},
			file: "w/catalog.yaml",
			want: []string{"name: w", "defaultChannel: stable", "description: The w operator manages widgets.", "mediatype: image/svg+xml"},
		},
		{
			name: "json",
			opts: func(t *testing.T, dir string) InitOptions {
				return InitOptions{Dir: dir, Package: "w", Format: fbc.FormatJSON}
			},
			file: "w/catalog.json",
			want: []string{`"schema": "olm.package"`, `"name": "w"`},
		},
		{
			name: "already initialized",
			opts: func(t *testing.T, dir string) InitOptions {
				if err := Init(t.Context(), InitOptions{Dir: dir, Package: "w"}); err != nil {
					t.Fatal(err)
				}
				return InitOptions{Dir: dir, Package: "w"}
			},
			wantErr: `package already in catalog: "w"`,
		},
		{
			name: "invalid name",
			opts: func(t *testing.T, dir string) InitOptions {
				return InitOptions{Dir: dir, Package: "Not_Valid"}
			},
			wantErr: `invalid package name "Not_Valid"`,
		},
		{
			name: "an invalid default channel",
			opts: func(t *testing.T, dir string) InitOptions {
				return InitOptions{Dir: dir, Package: "w", DefaultChannel: "Stable"}
			},
			wantErr: `default channel: invalid channel name "Stable"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "catalog")
			opts := tt.opts(t, dir)
			before := ""
			if _, err := os.Stat(dir); err == nil {
				before = snapshot(t, dir)
			}
			err := Init(t.Context(), opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				after := ""
				if _, err := os.Stat(dir); err == nil {
					after = snapshot(t, dir)
				}
				if after != before {
					t.Errorf("failed init changed the directory")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			catalogtest.MustContain(t, string(data), tt.want...)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("catalog directory holds %d entries, want the package only", len(entries))
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name    string
		remove  string
		wantErr error
		want    []string
	}{
		{
			name:   "middle by version closes the chain",
			remove: "1.1.0",
			want:   []string{"w.v1.0.0", "w.v2.0.0 replaces=w.v1.0.0 skipRange=>=1.0.0 <2.0.0"},
		},
		{
			name:   "tail by name raises the range floor",
			remove: "w.v1.0.0",
			want:   []string{"w.v1.1.0", "w.v2.0.0 replaces=w.v1.1.0 skipRange=>=1.1.0 <2.0.0"},
		},
		{
			name:    "unknown",
			remove:  "9.9.9",
			wantErr: ErrBundleNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", "1.0.0", "1.1.0", "2.0.0")
			if err := Deprecate(t.Context(), DeprecateOptions{Dir: dir, Package: "w", Bundle: tt.remove, Message: "old"}); err != nil && tt.wantErr == nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			_, err := Remove(t.Context(), RemoveOptions{Dir: dir, Package: "w", Bundle: tt.remove})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if snapshot(t, dir) != before {
					t.Error("a failed remove changed the catalog")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := entriesOf(t, dir, "w", "stable"); !slices.Equal(got, tt.want) {
				t.Errorf("entries = %q, want %q", got, tt.want)
			}
			pf, _ := loadPackage(dir, "w")
			if len(pf.cfg.Deprecations) != 0 {
				t.Errorf("the removed bundle's deprecation stayed: %+v", pf.cfg.Deprecations)
			}
			if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRemoveLastBundleOfAChannel(t *testing.T) {
	dir := initPackage(t, "w")
	addVersions(t, dir, "w", "stable", "1.0.0")
	addVersions(t, dir, "w", "fast", "2.0.0")
	if err := Deprecate(t.Context(), DeprecateOptions{Dir: dir, Package: "w", Channel: "fast", Message: "use stable"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(t.Context(), RemoveOptions{Dir: dir, Package: "w", Bundle: "2.0.0"}); err != nil {
		t.Fatal(err)
	}
	pf, _ := loadPackage(dir, "w")
	if len(pf.cfg.Channels) != 1 || pf.cfg.Channels[0].Name != "stable" || len(pf.cfg.Deprecations) != 0 {
		t.Errorf("channels %+v deprecations %+v", pf.cfg.Channels, pf.cfg.Deprecations)
	}
	// Removing the last bundle leaves the package as Init made it.
	if _, err := Remove(t.Context(), RemoveOptions{Dir: dir, Package: "w", Bundle: "1.0.0"}); err != nil {
		t.Fatalf("removing the package's last bundle: %v", err)
	}
	pf, _ = loadPackage(dir, "w")
	if len(pf.cfg.Bundles) != 0 || len(pf.cfg.Channels) != 0 || pf.pkg().DefaultChannel != "stable" {
		t.Errorf("after removing every bundle: %+v", pf.cfg)
	}
}

func TestDeprecate(t *testing.T) {
	tests := []struct {
		name    string
		opts    DeprecateOptions
		wantErr string
		want    declcfg.DeprecationEntry
	}{
		{
			name: "bundle by version",
			opts: DeprecateOptions{Bundle: "1.0.0", Message: "CVE-2026-1; upgrade"},
			want: declcfg.DeprecationEntry{Reference: declcfg.PackageScopedReference{Schema: "olm.bundle", Name: "w.v1.0.0"}, Message: "CVE-2026-1; upgrade"},
		},
		{
			name: "channel",
			opts: DeprecateOptions{Channel: "stable", Message: "use fast"},
			want: declcfg.DeprecationEntry{Reference: declcfg.PackageScopedReference{Schema: "olm.channel", Name: "stable"}, Message: "use fast"},
		},
		{
			name: "package",
			opts: DeprecateOptions{Message: "end of life"},
			want: declcfg.DeprecationEntry{Reference: declcfg.PackageScopedReference{Schema: "olm.package"}, Message: "end of life"},
		},
		{name: "no message", opts: DeprecateOptions{Channel: "stable"}, wantErr: "a deprecation message is required"},
		{name: "unknown channel", opts: DeprecateOptions{Channel: "beta", Message: "x"}, wantErr: `package "w" has no channel "beta"`},
		{name: "unknown bundle", opts: DeprecateOptions{Bundle: "w.v7.0.0", Message: "x"}, wantErr: "bundle not found in catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", "1.0.0", "1.1.0")
			opts := tt.opts
			opts.Dir, opts.Package = dir, "w"
			before := snapshot(t, dir)
			err := Deprecate(t.Context(), opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if snapshot(t, dir) != before {
					t.Error("a failed deprecate changed the catalog")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Deprecating again replaces the message.
			opts.Message += " (updated)"
			if err := Deprecate(t.Context(), opts); err != nil {
				t.Fatal(err)
			}
			pf, _ := loadPackage(dir, "w")
			want := tt.want
			want.Message += " (updated)"
			if len(pf.cfg.Deprecations) != 1 || !slices.Equal(pf.cfg.Deprecations[0].Entries, []declcfg.DeprecationEntry{want}) {
				t.Errorf("deprecations = %+v, want [%+v]", pf.cfg.Deprecations, want)
			}
			if err := validate.FS(t.Context(), dir, os.DirFS(dir)); err != nil {
				t.Error(err)
			}
		})
	}
}

// writeCatalogFile writes a file into a catalog, creating its directory.
// Every writer refuses a catalog with a file that does not load, names
// the file, and writes nothing: what it wrote would sit in a catalog that
// catalog validate rejects.
func TestWritersRefuseACatalogThatDoesNotLoad(t *testing.T) {
	const broken = "other/catalog.json"
	tests := []struct {
		name  string
		write func(t *testing.T, dir string) error
	}{
		{"init", func(t *testing.T, dir string) error {
			return Init(t.Context(), InitOptions{Dir: dir, Package: "v"})
		}},
		{"add", func(t *testing.T, dir string) error {
			_, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "2.0.0", Channels: "stable"})})
			return err
		}},
		{"add, initializing the package", func(t *testing.T, dir string) error {
			_, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "v", Version: "1.0.0", Channels: "stable"}), InitPackage: true})
			return err
		}},
		{"remove", func(t *testing.T, dir string) error {
			_, err := Remove(t.Context(), RemoveOptions{Dir: dir, Package: "w", Bundle: "1.0.0"})
			return err
		}},
		{"deprecate", func(t *testing.T, dir string) error {
			return Deprecate(t.Context(), DeprecateOptions{Dir: dir, Package: "w", Message: "use v"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			addVersions(t, dir, "w", "stable", "1.0.0", "1.1.0")
			// A truncated JSON file.
			catalogtest.WriteFile(t, filepath.Join(dir, broken), "{\n  \"schema\": \"olm.package\",\n  \"name\": \"oth")
			before := snapshot(t, dir)
			err := tt.write(t, dir)
			if !errors.Is(err, ErrCatalogUnreadable) || !strings.Contains(err.Error(), dir+": "+broken+": ") {
				t.Fatalf("error = %v, want ErrCatalogUnreadable naming %s", err, broken)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("a refused %s changed the catalog", tt.name)
			}
		})
	}
}

// Writers other than Init refuse a catalog directory that does not exist,
// and leave no lock file beside it.
func TestWritersRefuseAMissingCatalogDir(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, dir string) error
	}{
		{"add", func(t *testing.T, dir string) error {
			_, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "2.0.0", Channels: "stable"})})
			return err
		}},
		{"remove", func(t *testing.T, dir string) error {
			_, err := Remove(t.Context(), RemoveOptions{Dir: dir, Package: "w", Bundle: "1.0.0"})
			return err
		}},
		{"deprecate", func(t *testing.T, dir string) error {
			return Deprecate(t.Context(), DeprecateOptions{Dir: dir, Package: "w", Message: "use v"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "catalgo")
			err := tt.write(t, dir)
			if !errors.Is(err, ErrNoCatalogDir) || !strings.Contains(err.Error(), dir+" does not exist") {
				t.Fatalf("error = %v, want ErrNoCatalogDir saying %s does not exist", err, dir)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("left %v beside the missing catalog directory", entries)
			}
		})
	}
}

// A failed Init that created the catalog directory removes it, and its
// lock file with it.
func TestFailedInitLeavesNoCatalogDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "catalog")
	writeFile := func(p string, data []byte, perm os.FileMode) error { return errors.New("disk full") }
	if err := Init(t.Context(), InitOptions{Dir: dir, Package: "w", writeFile: writeFile}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Init() = %v, want the write's error", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a failed init left %v", entries)
	}
}
