package bundle

import (
	"context"
	"slices"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// fillCSV sets what the bundle generates in the CSV, the base's authored
// fields kept, step by step: its name and version, the owned APIs (from the
// CRDs, the samples and the charts), the install strategy with its images,
// the Kubernetes version it needs, and the upgrade path. It returns the
// project objects the install strategy took in.
func (g *generation) fillCSV(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, m *projectManifests, pkg string) (map[string]bool, error) {
	v := semver.MustParse(g.opts.Version)
	csv.Name = pkg + ".v" + g.opts.Version
	csv.Spec.Version = version.OperatorVersion{Version: v}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations[AnnotationBuilder] = g.opts.Builder
	csv.Annotations[AnnotationProjectLayout] = ProjectLayout
	csv.Spec.Icon = slices.DeleteFunc(csv.Spec.Icon, func(i v1alpha1.Icon) bool { return i.Data == "" })
	if err := g.ownedAPIs(csv, m); err != nil {
		return nil, err
	}
	consumed, err := g.installStrategy(ctx, csv, m)
	if err != nil {
		return nil, err
	}
	if csv.Spec.MinKubeVersion == "" {
		csv.Spec.MinKubeVersion = g.minKubeVersion()
	}
	return consumed, g.upgradePath(ctx, csv, pkg, v)
}
