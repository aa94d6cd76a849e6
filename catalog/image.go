package catalog

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/sirupsen/logrus"
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
// and opm's entrypoint. Layers are reproducible: sorted entries, zero
// times, root ownership.
func BuildImage(ctx context.Context, opts ImageOptions) (v1.Image, error) {
	if err := Validate(ctx, ValidateOptions{Dir: opts.Dir}); err != nil {
		return nil, err
	}
	base := empty.Image
	if opts.Base != "" {
		ref, err := name.ParseReference(opts.Base)
		if err != nil {
			return nil, fmt.Errorf("base image: %w", err)
		}
		if base, err = remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return nil, fmt.Errorf("pulling base image %s: %w", opts.Base, err)
		}
	}

	configs, err := tarDir(os.DirFS(opts.Dir), strings.TrimPrefix(ImageConfigsDir, "/"))
	if err != nil {
		return nil, err
	}
	layers := [][]byte{configs}
	if !opts.NoCache {
		c, err := buildCacheLayer(ctx, opts.Dir)
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
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(mt))
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
func buildCacheLayer(ctx context.Context, dir string) ([]byte, error) {
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
	return tarDir(os.DirFS(cacheDir), strings.TrimPrefix(ImageCacheDir, "/"))
}

// tarDir archives fsys under prefix, reproducibly.
func tarDir(fsys fs.FS, prefix string) ([]byte, error) {
	var paths []string
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." {
			paths = append(paths, p)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("archiving catalog: %w", err)
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// The parents of prefix, then the tree.
	var parts []string
	if prefix != "" {
		parts = strings.Split(prefix, "/")
	}
	for i := range parts {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Join(parts[:i+1]...) + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		fi, err := fs.Stat(fsys, p)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Name: path.Join(prefix, p), Format: tar.FormatPAX}
		switch {
		case fi.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
		case fi.Mode().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil, err
			}
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("archiving catalog: %s is neither a file nor a directory", p)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteOCILayout writes img into an OCI image layout directory (created or
// appended to), tagged with tag through the org.opencontainers.image.ref.name
// annotation.
func WriteOCILayout(img v1.Image, dir, tag string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("writing OCI layout %s: %w", dir, err)
		}
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return fmt.Errorf("writing OCI layout %s: %w", dir, err)
	}
	return nil
}

// PushImage pushes img to ref with the docker credentials (~/.docker/config.json
// and its helpers). Registries on loopback and private addresses are spoken
// to over plain HTTP, as docker does.
func PushImage(ctx context.Context, img v1.Image, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return img.Digest()
}

// ErrNotACatalogImage means an image lacks the configs label.
var ErrNotACatalogImage = errors.New("not a catalog image")

// PullImage pulls a catalog image and extracts its FBC (the directory its
// operators.operatorframework.io.index.configs.v1 label names) into dir,
// which must not exist yet.
func PullImage(ctx context.Context, ref, dir string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("pulling %s: %w", ref, err)
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
	if err := extractDir(img, root, dir); err != nil {
		if errors.Is(err, errNothingExtracted) {
			return fmt.Errorf("%w: nothing under /%s", ErrNotACatalogImage, root)
		}
		return err
	}
	return nil
}

var errNothingExtracted = errors.New("no files")

// pullBundleImage pulls a registry+v1 bundle image and writes its
// manifests/ and metadata/ into dir.
func pullBundleImage(ctx context.Context, ref, dir string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return fmt.Errorf("pulling bundle %s: %w", ref, err)
	}
	if err := extractDir(img, "", dir); err != nil {
		return fmt.Errorf("bundle %s: %w", ref, err)
	}
	return nil
}

// extractDir writes the regular files under root ("" for all) of the
// image's flattened filesystem into dir, which must not exist yet; on
// failure dir is not left behind.
func extractDir(img v1.Image, root, dir string) (err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading image: %w", err)
		}
		rel := path.Clean(strings.TrimPrefix(h.Name, "/"))
		ok := true
		if root != "" {
			rel, ok = strings.CutPrefix(rel, root+"/")
		}
		if !ok || !filepath.IsLocal(rel) {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			found = true
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	if !found {
		return errNothingExtracted
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
