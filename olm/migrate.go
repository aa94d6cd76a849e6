package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/storageversion"
)

// MigrateOptions say which CRDs MigrateStorage migrates.
type MigrateOptions struct {
	// CRDs are CRD names (plural.group).
	CRDs []string
	// Package, with Namespace, adds the CRDs that the installed CSV of
	// the package's Subscription owns.
	Package, Namespace string
	// DryRun counts what would be rewritten and writes nothing.
	DryRun bool
	// Out receives a line per CR that could not be rewritten.
	Out io.Writer
}

// MigrateStorage rewrites the CRs of each CRD in its storage version and
// trims its status.storedVersions (package storageversion), so that a
// later release may drop the old versions. It acts as cfg's user, who
// must see every CR of the CRDs: the cluster admin, as a rule. An
// operator watching all namespaces does the same at start-up.
func MigrateStorage(ctx context.Context, c client.Client, cfg *rest.Config, opts MigrateOptions) ([]*storageversion.Result, error) {
	crds := slices.Clone(opts.CRDs)
	if opts.Package != "" {
		o, err := Observe(ctx, c, opts.Package, opts.Namespace)
		if err != nil {
			return nil, err
		}
		if o.CSV == nil {
			return nil, fmt.Errorf("package %s in %s: %w, or it has no CSV yet", opts.Package, opts.Namespace, ErrNotSubscribed)
		}
		for _, d := range o.CSV.Spec.CustomResourceDefinitions.Owned {
			crds = append(crds, d.Name)
		}
	}
	slices.Sort(crds)
	crds = slices.Compact(crds)
	if len(crds) == 0 {
		return nil, errors.New("no CRD to migrate: name them, or the package whose CRDs they are")
	}
	m, err := storageversion.New(cfg, storageversion.Options{DryRun: opts.DryRun, Out: opts.Out})
	if err != nil {
		return nil, err
	}
	var out []*storageversion.Result
	var errs []error
	for _, name := range crds {
		res, err := m.Migrate(ctx, name)
		if res != nil {
			out = append(out, res)
		}
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}
