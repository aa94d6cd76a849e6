package bundle

import (
	"cmp"
	"context"
	"fmt"

	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/scaffold"
)

// Generate writes the project's registry+v1 bundle. The bundle directory
// is built aside and renamed into place: it holds the old bundle or the new
// one, never a mix. Files in metadata/ other than annotations.yaml (e.g.
// dependencies.yaml, properties.yaml) are kept.
func Generate(ctx context.Context, opts GenerateOptions) (*GenerateResult, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("bundle generate: %w", err)
	}
	g := &generation{opts: opts, res: &GenerateResult{Dir: opts.OutputDir}}
	if err := g.run(ctx); err != nil {
		return nil, fmt.Errorf("bundle generate: %w", err)
	}
	for _, w := range g.res.Warnings {
		fmt.Fprintln(opts.Out, "warning:", w)
	}
	return g.res, nil
}

// run is bundle generate's steps, in order: the project and its base CSV,
// the CSV filled in, the bundle's manifests, the capability level the
// evidence proves, the metadata, and the write.
func (g *generation) run(ctx context.Context) error {
	pkg, err := g.loadProject()
	if err != nil {
		return err
	}
	csv, m, err := g.readBase()
	if err != nil {
		return err
	}
	consumed, err := g.fillCSV(ctx, csv, m, pkg)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	monitoring, err := g.manifestFiles(files, m, consumed)
	if err != nil {
		return err
	}
	if err := g.capabilities(csv, monitoring); err != nil {
		return err
	}
	df, err := g.metadataFiles(files, pkg, m.scorecard != nil)
	if err != nil {
		return err
	}
	return g.write(files, csv, pkg, df)
}

// loadProject reads the PROJECT file and returns the package's name.
func (g *generation) loadProject() (string, error) {
	proj, err := scaffold.LoadProject(g.opts.Dir)
	if err != nil {
		return "", err
	}
	g.project = proj
	pkg := cmp.Or(g.opts.Package, proj.ProjectName)
	if err := registryv1.CheckPackageName(pkg); err != nil {
		return "", fmt.Errorf("the package name is the project's name (%s projectName) unless --package gives one: %w", scaffold.ProjectFile, err)
	}
	g.res.Package = pkg
	return pkg, nil
}
