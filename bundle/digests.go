package bundle

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// pinDigests replaces every image reference of the CSV's deployments and
// relatedImages by name@digest, asking each registry once per reference.
func pinDigests(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	resolved := map[string]string{}
	pin := func(ref string) (string, error) {
		if ref == "" || strings.Contains(ref, "@") {
			return ref, nil
		}
		if r, ok := resolved[ref]; ok {
			return r, nil
		}
		parsed, err := name.ParseReference(ref)
		if err != nil {
			return "", fmt.Errorf("image %q: %w", ref, err)
		}
		d, err := ociimage.Resolve(ctx, ref)
		if err != nil {
			return "", fmt.Errorf("--use-image-digests: %w", err)
		}
		out := parsed.Context().Name() + "@" + d.String()
		resolved[ref] = out
		return out, nil
	}
	spec := &csv.Spec.InstallStrategy.StrategySpec
	for i := range spec.DeploymentSpecs {
		ps := &spec.DeploymentSpecs[i].Spec.Template.Spec
		for _, cs := range [][]corev1.Container{ps.InitContainers, ps.Containers} {
			for j := range cs {
				p, err := pin(cs[j].Image)
				if err != nil {
					return err
				}
				cs[j].Image = p
				for k := range cs[j].Env {
					if strings.HasPrefix(cs[j].Env[k].Name, "RELATED_IMAGE_") {
						if cs[j].Env[k].Value, err = pin(cs[j].Env[k].Value); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	for i := range csv.Spec.RelatedImages {
		p, err := pin(csv.Spec.RelatedImages[i].Image)
		if err != nil {
			return err
		}
		csv.Spec.RelatedImages[i].Image = p
	}
	return nil
}
