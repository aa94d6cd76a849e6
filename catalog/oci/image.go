package oci

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/sirupsen/logrus"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// The layout of a catalog image, as opm builds it.
const (
	// ConfigsLabel names the directory holding the FBC in a catalog image.
	ConfigsLabel = "operators.operatorframework.io.index.configs.v1"
	// ImageConfigsDir is where the FBC lives in the image.
	ImageConfigsDir = "/configs"
	// ImageCacheDir is where the pre-built serving cache lives in the image.
	ImageCacheDir = "/tmp/cache"
	// DefaultBaseImage is the opm image catalog.Dockerfile starts from.
	DefaultBaseImage = "quay.io/operator-framework/opm:latest"
)

// ImageOptions describe a catalog image.
type ImageOptions struct {
	// Dir is the catalog directory; it is validated first.
	Dir string
	// Base is the image to build on, e.g. an opm image whose /bin/opm serves
	// the catalog; pulled with the docker credentials. Empty means an empty
	// base: the image then only carries the catalog (what OLM's catalogd and
	// `chartpilot catalog serve IMAGE` read).
	Base string
	// Labels are added to the image's labels.
	Labels map[string]string
	// NoCache leaves out the pre-built serving cache.
	NoCache bool
	// Platform of an image built on the empty base; default linux/<GOARCH>.
	Platform *v1.Platform
}

// BuildImage builds the catalog image without a container engine: the
// FBC under /configs, operator-registry's serving cache pre-built under
// /tmp/cache, the label operators.operatorframework.io.index.configs.v1,
// and opm's entrypoint. The catalog's layer is reproducible (sorted
// entries, zero times, root ownership); the serving cache's is not, since
// its database seeds its hash index at random: NoCache gives the same
// digest for the same catalog.
func BuildImage(ctx context.Context, opts ImageOptions) (v1.Image, error) {
	cfg, err := fbc.LoadDir(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := validate.Config(opts.Dir, cfg); err != nil {
		return nil, err
	}
	base := empty.Image
	if opts.Base != "" {
		ref, err := name.ParseReference(opts.Base)
		if err != nil {
			return nil, fmt.Errorf("base image: %w", err)
		}
		if base, err = ociimage.Pull(ctx, ref.String()); err != nil {
			return nil, fmt.Errorf("base image: %w", err)
		}
	}

	configs, err := ociimage.TarDir(os.DirFS(opts.Dir), strings.TrimPrefix(ImageConfigsDir, "/"))
	if err != nil {
		return nil, err
	}
	layers := [][]byte{configs}
	if !opts.NoCache {
		c, err := buildCacheLayer(ctx, opts.Dir, imageOwner(base))
		if err != nil {
			return nil, err
		}
		layers = append(layers, c)
	}
	mt := types.OCILayer
	if opts.Base != "" {
		if m, err := base.MediaType(); err == nil && m == types.DockerManifestSchema2 {
			mt = types.DockerLayer
		}
	}
	for _, data := range layers {
		l, err := ociimage.Layer(data, mt)
		if err != nil {
			return nil, err
		}
		if base, err = mutate.AppendLayers(base, l); err != nil {
			return nil, err
		}
	}
	if opts.Base == "" {
		base = mutate.MediaType(base, types.OCIManifestSchema1)
		base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	}

	cf, err := base.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	if opts.Base == "" {
		p := cmp.Or(opts.Platform, &v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	}
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range opts.Labels {
		cf.Config.Labels[k] = v
	}
	cf.Config.Labels[ConfigsLabel] = ImageConfigsDir
	cf.Config.Entrypoint = []string{"/bin/opm"}
	cf.Config.Cmd = []string{"serve", ImageConfigsDir, "--cache-dir=" + ImageCacheDir}
	if base, err = mutate.ConfigFile(base, cf); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(base, v1.Time{})
}

// buildCacheLayer builds operator-registry's serving cache for the catalog
// and returns it as a layer under /tmp/cache.
func buildCacheLayer(ctx context.Context, dir string, owner [2]int) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "chartpilot-catalog-image-cache-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cacheDir := filepath.Join(tmp, "cache")
	log := logrus.New()
	log.SetOutput(io.Discard)
	c, err := cache.New(cacheDir, cache.WithLog(logrus.NewEntry(log)))
	if err != nil {
		return nil, fmt.Errorf("building the serving cache: %w", err)
	}
	if err := c.Build(ctx, os.DirFS(dir)); err != nil {
		c.Close()
		return nil, fmt.Errorf("building the serving cache: %w", err)
	}
	if err := c.Close(); err != nil {
		return nil, err
	}
	entries, err := ociimage.DirEntries(os.DirFS(cacheDir), strings.TrimPrefix(ImageCacheDir, "/"))
	if err != nil {
		return nil, err
	}
	// opm locks and may refresh its cache: it must own it, as it does when
	// catalog.Dockerfile's `RUN opm serve --cache-only` runs as the base
	// image's user.
	entries = append(entries, ociimage.Entry{Name: strings.TrimPrefix(ImageCacheDir, "/"), Dir: true})
	for i := range entries {
		entries[i].UID, entries[i].GID = owner[0], owner[1]
	}
	// The layer's /tmp keeps the permissions every /tmp has, over the base's.
	entries = append(entries, ociimage.Entry{Name: "tmp", Dir: true, Mode: 0o1777})
	return ociimage.Tar(entries)
}

// imageOwner is the numeric user and group an image runs as (its config's
// User, "uid" or "uid:gid"); root when it names none or names a user by name.
func imageOwner(img v1.Image) [2]int {
	cf, err := img.ConfigFile()
	if err != nil {
		return [2]int{}
	}
	user, group, hasGroup := strings.Cut(cf.Config.User, ":")
	uid, err := strconv.Atoi(user)
	if err != nil {
		return [2]int{}
	}
	gid := uid
	if hasGroup {
		if gid, err = strconv.Atoi(group); err != nil {
			gid = 0
		}
	}
	return [2]int{uid, gid}
}

// ErrNotACatalogImage means an image lacks the configs label.
var ErrNotACatalogImage = errors.New("not a catalog image")

// PullImage pulls a catalog image and extracts its FBC (the directory its
// operators.operatorframework.io.index.configs.v1 label names) into dir,
// which must not exist yet.
func PullImage(ctx context.Context, ref, dir string) (v1.Hash, error) {
	img, err := ociimage.Pull(ctx, ref)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := ExtractConfigs(img, dir); err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", ref, err)
	}
	return img.Digest()
}

// ExtractConfigs writes the FBC of a catalog image into dir, which must
// not exist yet; on failure dir is not left behind.
func ExtractConfigs(img v1.Image, dir string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	root := strings.Trim(cf.Config.Labels[ConfigsLabel], "/")
	if root == "" {
		return fmt.Errorf("%w: no %s label", ErrNotACatalogImage, ConfigsLabel)
	}
	if err := ociimage.ExtractDir(img, root, dir); err != nil {
		if errors.Is(err, ociimage.ErrNothingExtracted) {
			return fmt.Errorf("%w: nothing under /%s", ErrNotACatalogImage, root)
		}
		return err
	}
	return nil
}

// DockerfileOptions describe a catalog.Dockerfile.
type DockerfileOptions struct {
	// BaseImage is the opm image to start from; default DefaultBaseImage.
	BaseImage string
	// CatalogDir is the catalog directory, relative to the build context;
	// default "catalog".
	CatalogDir string
}

var dockerfile = template.Must(template.New("catalog.Dockerfile").Parse(`# The catalog image, for docker and podman users; ` + "`chartpilot catalog build`" + `
# builds the same image without a container engine.
# The base image provides /bin/opm, which serves the catalog over gRPC.
FROM {{.BaseImage}}

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "{{.ConfigsDir}}", "--cache-dir={{.CacheDir}}"]

# The file-based catalog, and its serving cache built at image build time
# so that the catalog pod is ready sooner.
ADD {{.CatalogDir}} {{.ConfigsDir}}
RUN ["/bin/opm", "serve", "{{.ConfigsDir}}", "--cache-dir={{.CacheDir}}", "--cache-only"]

# Where OLM finds the catalog in the image.
LABEL {{.Label}}={{.ConfigsDir}}
`))

// WriteDockerfile writes a catalog.Dockerfile equivalent to opm's generated
// one: FROM an opm image, the catalog under /configs, the cache pre-built.
func WriteDockerfile(w io.Writer, opts DockerfileOptions) error {
	return dockerfile.Execute(w, map[string]string{
		"BaseImage":  cmp.Or(opts.BaseImage, DefaultBaseImage),
		"CatalogDir": filepath.ToSlash(cmp.Or(opts.CatalogDir, "catalog")),
		"ConfigsDir": ImageConfigsDir,
		"CacheDir":   ImageCacheDir,
		"Label":      ConfigsLabel,
	})
}
