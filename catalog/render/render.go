package render

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/chartpilot/chartpilot/catalog/fbc"
)

// Options select what to render and how.
type Options struct {
	// Format is yaml (default) or json.
	Format fbc.Format
	// Packages limits the output to these packages; empty means all.
	Packages []string
}

// Render writes the catalog in fsys as one FBC stream in a deterministic order:
// packages by name, each with its olm.package, channels and bundles by
// name, then its other blobs and deprecations.
func Render(ctx context.Context, w io.Writer, fsys fs.FS, opts Options) error {
	f := cmp.Or(opts.Format, fbc.FormatYAML)
	if err := f.Check(); err != nil {
		return err
	}
	cfg, err := load(ctx, fsys, opts.Packages)
	if err != nil {
		return err
	}
	fbc.Sort(cfg)
	normalizeBundles(cfg)
	return writeConcurrently(ctx, cfg, f, w)
}

// normalizeBundles orders what `opm render` orders, so that both render a
// catalog alike: each bundle's manifests (olm.bundle.object and
// olm.csv.metadata properties) after its other properties, and its related
// images by image.
func normalizeBundles(cfg *declcfg.DeclarativeConfig) {
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		manifest := func(p property.Property) bool {
			return p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata
		}
		props := make([]property.Property, 0, len(b.Properties))
		for _, p := range b.Properties {
			if !manifest(p) {
				props = append(props, p)
			}
		}
		for _, p := range b.Properties {
			if manifest(p) {
				props = append(props, p)
			}
		}
		b.Properties = props
		// sort.Slice, as opm: images listed twice keep opm's order.
		sort.Slice(b.RelatedImages, func(x, y int) bool { return b.RelatedImages[x].Image < b.RelatedImages[y].Image })
	}
}

// writeConcurrently encodes each package on its own goroutine and writes
// them in name order, then the blobs of no package: the bytes the declcfg
// writer produces for the whole catalog, in a fraction of the time. It
// streams: a package is written as soon as it and those before it are
// encoded, and both its blobs and its encoding are dropped then, so that
// the catalog and its whole rendering are never in memory at once (they
// were render's peak). cfg is emptied; encoding runs at most
// renderLookahead packages ahead of the writer.
func writeConcurrently(ctx context.Context, cfg *declcfg.DeclarativeConfig, f fbc.Format, w io.Writer) error {
	names, byPkg, rootOthers := fbc.SplitByPackage(*cfg)
	*cfg = declcfg.DeclarativeConfig{}
	parts := make([]encodedPackage, len(names))
	for i, n := range sets.List(names) {
		parts[i] = encodedPackage{cfg: *byPkg[n], done: make(chan struct{})}
	}
	clear(byPkg)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, renderLookahead())
	go func() {
		for i := range parts {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go parts[i].encode(f)
		}
	}()
	for i := range parts {
		select {
		case <-parts[i].done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if parts[i].err != nil {
			return parts[i].err
		}
		if _, err := parts[i].out.WriteTo(w); err != nil {
			return err
		}
		parts[i].out = bytes.Buffer{}
		<-slots
	}
	if len(rootOthers) == 0 {
		return nil
	}
	return f.Write(declcfg.DeclarativeConfig{Others: rootOthers}, w)
}

// renderLookahead is how many packages may be encoded and not yet written:
// enough to keep every CPU busy while one large package is encoded.
func renderLookahead() int { return 2 * runtime.GOMAXPROCS(0) }

// encodedPackage is one package of a streamed render.
type encodedPackage struct {
	cfg  declcfg.DeclarativeConfig
	out  bytes.Buffer
	err  error
	done chan struct{}
}

// encode writes the package into out and drops its blobs.
func (p *encodedPackage) encode(f fbc.Format) {
	defer close(p.done)
	p.err = f.Write(p.cfg, &p.out)
	p.cfg = declcfg.DeclarativeConfig{}
}

// GraphOptions select the upgrade graphs to draw.
type GraphOptions struct {
	// Packages limits the output to these packages; empty means all.
	Packages []string
	// Format is GraphMermaid (the default) or GraphSVG.
	Format string
}

// The formats Graph writes.
const (
	// GraphMermaid is a mermaid flowchart (text that renders on GitHub).
	GraphMermaid = "mermaid"
	// GraphSVG is an SVG picture.
	GraphSVG = "svg"
)

// Graph writes the upgrade graph of every channel of the catalog in fsys
// as a mermaid flowchart or an SVG picture.
func Graph(ctx context.Context, w io.Writer, fsys fs.FS, opts GraphOptions) error {
	if opts.Format != "" && opts.Format != GraphMermaid && opts.Format != GraphSVG {
		return fmt.Errorf("unknown graph format %q (want %s or %s)", opts.Format, GraphMermaid, GraphSVG)
	}
	cfg, err := load(ctx, fsys, opts.Packages)
	if err != nil {
		return err
	}
	if opts.Format == GraphSVG {
		return WriteSVG(w, cfg)
	}
	return WriteMermaid(w, cfg)
}

// load reads the catalog in fsys, limited to pkgs unless empty. The
// bundles' decoded manifests are not written: not kept either.
func load(ctx context.Context, fsys fs.FS, pkgs []string) (*declcfg.DeclarativeConfig, error) {
	cfg, err := fbc.LoadForWrite(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	if len(pkgs) > 0 {
		cfg = fbc.FilterPackages(cfg, pkgs)
	}
	return cfg, nil
}
