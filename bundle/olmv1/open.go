package olmv1

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// Open loads a bundle from a directory (manifests/, metadata/) or, when src
// is an image reference and no such directory exists, from a bundle image
// pulled with the docker credentials.
func Open(ctx context.Context, src string) (*Bundle, error) {
	if !ociimage.IsReference(src) {
		if _, err := os.Stat(filepath.Join(src, registryv1.ManifestsDir)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bundle %s: no %s directory (want a bundle directory or image)", src, registryv1.ManifestsDir)
		}
		b, err := Load(os.DirFS(src))
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", src, err)
		}
		return b, nil
	}
	tmp, err := os.MkdirTemp("", "chartpilot-bundle-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	img, err := ociimage.Pull(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", src, err)
	}
	dir := filepath.Join(tmp, "bundle")
	if err := ociimage.ExtractDir(img, "", dir); err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", src, err)
	}
	b, err := Load(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", src, err)
	}
	return b, nil
}
