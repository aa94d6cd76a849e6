package edit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

var (
	// ErrPackageNotFound means the catalog holds no such package (run Init first).
	ErrPackageNotFound = errors.New("package not found in catalog")
	// ErrPackageExists means Init found the package already initialized.
	ErrPackageExists = errors.New("package already in catalog")
	// ErrBundleExists means the bundle's version (or name) is already in the
	// package and AddOptions.Replace is not set.
	ErrBundleExists = errors.New("bundle already in catalog")
	// ErrBundleNotFound means no bundle of the package has that name or version.
	ErrBundleNotFound = errors.New("bundle not found in catalog")
	// ErrDefaultChannelEmpty means a change would leave the package's
	// default channel without bundles.
	ErrDefaultChannelEmpty = errors.New("default channel empty")
)

// The file holding a package, under <catalog dir>/<package>/.
const packageFileBase = "catalog"

// InitOptions describe a new package in a catalog directory.
type InitOptions struct {
	// Dir is the catalog directory; created if missing.
	Dir string
	// Package is the package name (a DNS-1123 label). Default: FromBundle's package.
	Package string
	// DefaultChannel is the channel Subscriptions get when they name none.
	// Default: FromBundle's default channel, else its first channel; left
	// empty, the first added bundle sets it.
	DefaultChannel string
	// Description of the package. Default: FromBundle's CSV description.
	Description string
	// Icon of the package. Default: FromBundle's CSV icon.
	Icon *declcfg.Icon
	// FromBundle is an optional registry+v1 bundle directory whose CSV and
	// annotations fill the fields left empty.
	FromBundle string
	// Format of the package file: yaml (default) or json.
	Format fbc.Format

	// writeFile writes the package file; nil writes through the staging directory (writeFunc.orDefault).
	writeFile writeFunc
}

// Init adds a package (an olm.package with no bundles yet) to the catalog
// directory, as <Dir>/<Package>/catalog.yaml. The package directory appears
// complete or not at all.
func Init(ctx context.Context, opts InitOptions) error {
	opts.Format = cmp.Or(opts.Format, fbc.FormatYAML)
	if err := opts.Format.Check(); err != nil {
		return err
	}
	if opts.Dir == "" {
		return errors.New("catalog directory must be set")
	}
	if opts.FromBundle != "" {
		b, err := bundledir.Read(opts.FromBundle, bundledir.Options{})
		if err != nil {
			return err
		}
		opts.Package = cmp.Or(opts.Package, b.Package)
		opts.DefaultChannel = cmp.Or(opts.DefaultChannel, b.DefaultChannel)
		if opts.DefaultChannel == "" && len(b.Channels) > 0 {
			opts.DefaultChannel = b.Channels[0]
		}
		opts.Description = cmp.Or(opts.Description, b.Description)
		if opts.Icon == nil {
			opts.Icon = b.Icon
		}
	}
	if err := registryv1.CheckPackageName(opts.Package); err != nil {
		return err
	}
	if opts.DefaultChannel != "" {
		if err := registryv1.CheckChannelName(opts.DefaultChannel); err != nil {
			return fmt.Errorf("default channel: %w", err)
		}
	}
	cfg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{{
		Schema:         declcfg.SchemaPackage,
		Name:           opts.Package,
		DefaultChannel: opts.DefaultChannel,
		Description:    opts.Description,
		Icon:           opts.Icon,
	}}}
	data, err := encodePackage(cfg, opts.Format)
	if err != nil {
		return err
	}
	createdRoot, err := mkdirIfMissing(opts.Dir)
	if err != nil {
		return fmt.Errorf("creating catalog directory: %w", err)
	}
	unlock, err := lockCatalog(ctx, opts.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := writeNewPackage(opts.Dir, opts.Package, opts.Format, data, opts.writeFile); err != nil {
		if createdRoot && os.Remove(opts.Dir) == nil {
			removeLock(opts.Dir)
		}
		return err
	}
	return nil
}

// mkdirIfMissing creates dir (and its parents) unless it exists, the way
// mkdir -p does (mode 0o777 less the umask); created says it did.
func mkdirIfMissing(dir string) (created bool, err error) {
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return false, err
	}
	return true, nil
}

// writeNewPackage writes the package directory <dir>/<pkg> holding data as
// its package file: built in the staging directory, then renamed into
// place, so it appears complete or not at all. The caller holds the
// catalog's lock.
func writeNewPackage(dir, pkg string, format fbc.Format, data []byte, writeFile writeFunc) error {
	if _, _, err := findPackageFile(dir, pkg); err == nil {
		return fmt.Errorf("%w: %q in %s", ErrPackageExists, pkg, dir)
	} else if !errors.Is(err, ErrPackageNotFound) {
		return err
	}
	pkgDir := filepath.Join(dir, pkg)
	if _, err := os.Lstat(pkgDir); err == nil {
		return fmt.Errorf("%w: %s exists but holds no %s.yaml or %s.json", ErrPackageExists, pkgDir, packageFileBase, packageFileBase)
	}
	staging, err := makeStaging(dir)
	if err != nil {
		return fmt.Errorf("initializing package %q: %w", pkg, err)
	}
	tmp, err := atomicfile.MkdirTemp(staging, pkg+".tmp-*")
	if err != nil {
		return fmt.Errorf("initializing package %q: %w", pkg, err)
	}
	err = writeFile.orDefault(dir)(filepath.Join(tmp, packageFileBase+"."+string(format)), data, 0o644)
	if err == nil {
		err = os.Rename(tmp, pkgDir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("initializing package %q: %w", pkg, err)
	}
	return nil
}

// findPackageFile returns the path and format of a package's file.
func findPackageFile(dir, pkg string) (string, fbc.Format, error) {
	for _, f := range []fbc.Format{fbc.FormatYAML, fbc.FormatJSON} {
		p := filepath.Join(dir, pkg, packageFileBase+"."+string(f))
		if _, err := os.Stat(p); err == nil {
			return p, f, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("%w: %q in %s (add it with `chartpilot catalog init`)", ErrPackageNotFound, pkg, dir)
}

// packageFile is one package of a catalog as read from, and written back
// to, its file.
type packageFile struct {
	// dir is the catalog directory.
	dir    string
	path   string
	format fbc.Format
	// isNew means the package is not in the catalog yet: save creates
	// its directory (writeNewPackage).
	isNew bool
	// original is the file's content, kept to prove nothing changed.
	original []byte
	cfg      declcfg.DeclarativeConfig
	// write writes the file back; nil writes through the staging directory (writeFunc.orDefault).
	write writeFunc
}

func loadPackage(dir, pkg string) (*packageFile, error) {
	if err := registryv1.CheckPackageName(pkg); err != nil {
		return nil, err
	}
	p, format, err := findPackageFile(dir, pkg)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	cfg, err := fbc.LoadBytes(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(cfg.Packages) != 1 || cfg.Packages[0].Name != pkg {
		return nil, fmt.Errorf("reading %s: want exactly one olm.package named %q", p, pkg)
	}
	for _, b := range cfg.Bundles {
		if b.Package != pkg {
			return nil, fmt.Errorf("reading %s: bundle %q belongs to package %q", p, b.Name, b.Package)
		}
	}
	for _, c := range cfg.Channels {
		if c.Package != pkg {
			return nil, fmt.Errorf("reading %s: channel %q belongs to package %q", p, c.Name, c.Package)
		}
	}
	return &packageFile{dir: dir, path: p, format: format, original: data, cfg: *cfg}, nil
}

// save writes the package back through a temporary file and a rename, or
// a new package's directory through writeNewPackage.
func (p *packageFile) save() error {
	data, err := encodePackage(p.cfg, p.format)
	if err != nil {
		return err
	}
	if p.isNew {
		return writeNewPackage(p.dir, p.pkg().Name, p.format, data, p.write)
	}
	if bytes.Equal(data, p.original) {
		return nil
	}
	return p.write.orDefault(p.dir)(p.path, data, 0o644)
}

// writeFunc writes a file of a catalog atomically, through the staging directory (orDefault), unless a
// test injects a failing one through the options' writeFile.
type writeFunc func(path string, data []byte, perm os.FileMode) error

// orDefault is w, or an atomic write through the staging directory of the
// catalog directory dir.
func (w writeFunc) orDefault(dir string) writeFunc {
	if w != nil {
		return w
	}
	return func(path string, data []byte, perm os.FileMode) error {
		staging, err := makeStaging(dir)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return atomicfile.WriteFileVia(staging, path, data, perm)
	}
}

// makeStaging creates the staging directory of the catalog directory dir
// (see stagingPath), where the writer holding the lock builds files.
func makeStaging(dir string) (string, error) {
	staging, err := stagingPath(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", fmt.Errorf("creating the staging directory: %w", err)
	}
	return staging, nil
}

func (p *packageFile) pkg() *declcfg.Package { return &p.cfg.Packages[0] }

// encodePackage renders a package in a stable order: channels and bundles
// by name (the declcfg writer), entries as placed, deprecations sorted.
func encodePackage(cfg declcfg.DeclarativeConfig, f fbc.Format) ([]byte, error) {
	fbc.SortDeprecations(cfg.Deprecations)
	var buf bytes.Buffer
	if err := f.Write(cfg, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// validate checks the package as it would be written.
func (p *packageFile) validate() error {
	return validate.PackageFile(p.path, p.pkg().Name, p.cfg)
}
