package kustomize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/pkg/util"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/internal/kustimage"
)

// Image replaces the image of containers whose image is Name, as
// `kustomize edit set image NAME=REF` does: also where an `images:` entry of
// the kustomization tree renamed Name (newName), so that the image given
// wins over one set earlier with kustomize edit.
type Image struct {
	// Name is the image name in the manifests, e.g. "controller".
	Name string
	// Ref is the image to use instead: name[:tag] or name@digest.
	Ref string
}

// ParseImage parses NAME=REF.
func ParseImage(s string) (Image, error) {
	name, ref, ok := strings.Cut(s, "=")
	if !ok || name == "" || ref == "" {
		return Image{}, fmt.Errorf("image %q: want NAME=REF, e.g. controller=example.com/op:v0.1.0", s)
	}
	return Image{Name: name, Ref: ref}, nil
}

// Build runs kustomize on the kustomization in dir with the images replaced,
// and returns its objects in the order they are applied.
func Build(dir string, images []Image) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	target := abs
	if len(images) > 0 {
		// An overlay on dir that sets the images, so the user's
		// kustomization.yaml is never edited (kustomize edit would).
		overlay, err := os.MkdirTemp("", "chartpilot-kustomize-")
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		defer os.RemoveAll(overlay)
		if images, err = withAliases(abs, images); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		if err := writeOverlay(overlay, abs, images); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		target = overlay
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), target)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	apply.Sort(objs)
	return objs, nil
}

// withAliases adds, for each image, one for every name the kustomization
// tree at dir renames its name to.
func withAliases(dir string, images []Image) ([]Image, error) {
	var out []Image
	for _, img := range images {
		names, err := kustimage.Aliases(dir, img.Name)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, Image{Name: n, Ref: img.Ref})
		}
	}
	return out, nil
}

func writeOverlay(overlay, base string, images []Image) error {
	// kustomize refuses absolute paths to a base.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		return err
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{rel},
	}
	for _, img := range images {
		name, tag, digest := util.SplitImageName(img.Ref)
		k.Images = append(k.Images, types.Image{Name: img.Name, NewName: name, NewTag: tag, Digest: digest})
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), data, 0o600)
}
