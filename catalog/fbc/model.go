package fbc

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// Format is the encoding of a catalog file or of rendered output.
type Format string

const (
	// FormatYAML is a stream of YAML documents, the default.
	FormatYAML Format = "yaml"
	// FormatJSON is a stream of indented JSON objects.
	FormatJSON Format = "json"
)

// Formats lists the supported formats, for flags.
var Formats = []string{string(FormatYAML), string(FormatJSON)}

// Check refuses a format other than FormatYAML and FormatJSON.
func (f Format) Check() error {
	switch f {
	case FormatYAML, FormatJSON:
		return nil
	}
	return fmt.Errorf("unknown format %q (want one of %s)", f, strings.Join(Formats, ", "))
}

// Write encodes cfg in the format, with the bytes of declcfg's writer.
func (f Format) Write(cfg declcfg.DeclarativeConfig, w io.Writer) error {
	if f == FormatJSON {
		return WriteJSON(cfg, w)
	}
	return WriteYAML(cfg, w)
}

// DirFS is the catalog directory dir as a file system, for Load; dir must
// exist: a mistyped path is named as such.
func DirFS(dir string) (fs.FS, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	return os.DirFS(dir), nil
}

// LoadDir is Load of the directory dir (DirFS).
func LoadDir(ctx context.Context, dir string) (*declcfg.DeclarativeConfig, error) {
	fsys, err := DirFS(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := Load(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("reading catalog %s: %w", dir, err)
	}
	return cfg, nil
}

// BundleVersion is the version in a bundle's olm.package property, by
// registryv1.ParseVersion's rule. Only that property is decoded: the others
// hold the bundle's manifests.
func BundleVersion(b *declcfg.Bundle) (semver.Version, error) {
	var pkgs []property.Package
	for i, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var pkg property.Package
		if err := json.Unmarshal(p.Value, &pkg); err != nil {
			return semver.Version{}, fmt.Errorf("bundle %q: %w", b.Name, property.ParseError{Idx: i, Typ: p.Type, Err: err})
		}
		pkgs = append(pkgs, pkg)
	}
	if len(pkgs) != 1 {
		return semver.Version{}, fmt.Errorf("bundle %q: want exactly one %s property, found %d", b.Name, property.TypePackage, len(pkgs))
	}
	v, err := registryv1.ParseVersion(pkgs[0].Version)
	if err != nil {
		return semver.Version{}, fmt.Errorf("bundle %q: %s: %w", b.Name, property.TypePackage, err)
	}
	return v, nil
}

// Sort puts a catalog in a deterministic order wherever the declcfg writer
// keeps the order it was given (deprecation entries, other blobs), so that
// output does not depend on the order files were read in.
func Sort(cfg *declcfg.DeclarativeConfig) {
	SortDeprecations(cfg.Deprecations)
	slices.SortFunc(cfg.Deprecations, func(a, b declcfg.Deprecation) int { return strings.Compare(a.Package, b.Package) })
	slices.SortStableFunc(cfg.Others, func(a, b declcfg.Meta) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Schema, b.Schema), strings.Compare(a.Name, b.Name))
	})
}

// SortDeprecations orders the entries of each deprecation: the package's,
// then channels', then bundles', each by name.
func SortDeprecations(ds []declcfg.Deprecation) {
	rank := map[string]int{declcfg.SchemaPackage: 0, declcfg.SchemaChannel: 1}
	schemaRank := func(s string) int {
		if r, ok := rank[s]; ok {
			return r
		}
		return 2
	}
	for i := range ds {
		slices.SortFunc(ds[i].Entries, func(a, b declcfg.DeprecationEntry) int {
			return cmp.Or(cmp.Compare(schemaRank(a.Reference.Schema), schemaRank(b.Reference.Schema)), strings.Compare(a.Reference.Name, b.Reference.Name))
		})
	}
}

// FilterPackages is the part of cfg that belongs to the named packages.
func FilterPackages(cfg *declcfg.DeclarativeConfig, pkgs []string) *declcfg.DeclarativeConfig {
	keep := func(p string) bool { return slices.Contains(pkgs, p) }
	out := &declcfg.DeclarativeConfig{}
	out.Packages = slices.DeleteFunc(slices.Clone(cfg.Packages), func(p declcfg.Package) bool { return !keep(p.Name) })
	out.Channels = slices.DeleteFunc(slices.Clone(cfg.Channels), func(c declcfg.Channel) bool { return !keep(c.Package) })
	out.Bundles = slices.DeleteFunc(slices.Clone(cfg.Bundles), func(b declcfg.Bundle) bool { return !keep(b.Package) })
	out.Deprecations = slices.DeleteFunc(slices.Clone(cfg.Deprecations), func(d declcfg.Deprecation) bool { return !keep(d.Package) })
	out.Others = slices.DeleteFunc(slices.Clone(cfg.Others), func(o declcfg.Meta) bool { return !keep(o.Package) })
	return out
}
