package oci

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// layerFiles lists the regular files of an image layer, with their sizes.
func layerFiles(t *testing.T, l v1.Layer) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.IsZero() && h.ModTime.Unix() != 0 {
			t.Errorf("%s has modification time %v; layers must be reproducible", h.Name, h.ModTime)
		}
		if h.Typeflag == tar.TypeReg {
			data, _ := io.ReadAll(tr)
			out[h.Name] = data
		}
	}
}

// twoPackages is a valid catalog of image-based packages w and img.
func twoPackages(t *testing.T) string {
	t.Helper()
	var pkgs []declcfg.DeclarativeConfig
	for _, p := range []string{"w", "img"} {
		stable := declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{
			catalogtest.Entry(p+".v1.0.0", "", ""), catalogtest.Entry(p+".v2.0.0", p+".v1.0.0", ""),
		}}
		pkgs = append(pkgs, catalogtest.Package(p, "stable", []string{"1.0.0", "2.0.0"}, stable))
	}
	return catalogtest.WriteCatalog(t, pkgs...)
}

func TestBuildImage(t *testing.T) {
	dir := twoPackages(t)
	tests := []struct {
		name    string
		opts    ImageOptions
		layers  int
		wantErr string
	}{
		{name: "with the serving cache", opts: ImageOptions{Dir: dir, Labels: map[string]string{"org.opencontainers.image.source": "https://example.com/w"}}, layers: 2},
		{name: "without the cache", opts: ImageOptions{Dir: dir, NoCache: true}, layers: 1},
		{name: "an invalid catalog is refused", opts: ImageOptions{Dir: catalogtest.WriteCatalog(t, catalogtest.Package("a", "stable", []string{"1.0.0"}))}, wantErr: "not found in any channel entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := BuildImage(t.Context(), tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.Labels[ConfigsLabel] != "/configs" || cf.OS != "linux" {
				t.Errorf("labels %v os %q", cf.Config.Labels, cf.OS)
			}
			for k, v := range tt.opts.Labels {
				if cf.Config.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
				}
			}
			if !slices.Equal(cf.Config.Cmd, []string{"serve", "/configs", "--cache-dir=/tmp/cache"}) {
				t.Errorf("cmd = %v", cf.Config.Cmd)
			}
			if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
				t.Errorf("media type %s", mt)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != tt.layers {
				t.Fatalf("%d layers, want %d", len(layers), tt.layers)
			}
			configs := layerFiles(t, layers[0])
			for _, pkg := range []string{"w", "img"} {
				want, err := os.ReadFile(filepath.Join(dir, pkg, "catalog.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(configs["configs/"+pkg+"/catalog.yaml"], want) {
					t.Errorf("configs/%s/catalog.yaml differs from the catalog", pkg)
				}
			}
			if len(configs) != 2 {
				t.Errorf("configs layer holds %d files, want 2", len(configs))
			}
			if tt.layers == 2 {
				var names []string
				for n := range layerFiles(t, layers[1]) {
					names = append(names, n)
				}
				if len(names) == 0 || !strings.HasPrefix(names[0], "tmp/cache/") {
					t.Errorf("cache layer files = %v", names)
				}
			}
			// Building twice gives the same configs layer.
			again, err := BuildImage(t.Context(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			l2, _ := again.Layers()
			d1, _ := layers[0].Digest()
			d2, _ := l2[0].Digest()
			if d1 != d2 {
				t.Errorf("configs layer digest changed between builds: %s, %s", d1, d2)
			}
		})
	}
}

func TestWriteDockerfile(t *testing.T) {
	tests := []struct {
		name string
		opts DockerfileOptions
		want []string
	}{
		{name: "defaults", want: []string{
			"FROM quay.io/operator-framework/opm:latest\n",
			`ENTRYPOINT ["/bin/opm"]`,
			`CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]`,
			"ADD catalog /configs\n",
			`RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]`,
			"LABEL operators.operatorframework.io.index.configs.v1=/configs\n",
		}},
		{name: "custom", opts: DockerfileOptions{BaseImage: "registry.example.com/opm:v1.73.0", CatalogDir: "build/catalog"}, want: []string{
			"FROM registry.example.com/opm:v1.73.0\n",
			"ADD build/catalog /configs\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteDockerfile(&buf, tt.opts); err != nil {
				t.Fatal(err)
			}
			catalogtest.MustContain(t, buf.String(), tt.want...)
		})
	}
}

// The serving cache belongs to the user the base image runs as, as when
// catalog.Dockerfile's RUN builds it: opm locks the cache when it serves,
// and a catalog pod runs as that user. /tmp keeps its sticky mode.
func TestBuildImageCacheOwnedByBaseUser(t *testing.T) {
	base, err := ociimage.Scratch(nil, ociimage.Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, User: "1001:1002"})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/opm:test"
	if _, err := ociimage.Push(t.Context(), base, ref); err != nil {
		t.Fatal(err)
	}
	img, err := BuildImage(t.Context(), ImageOptions{Dir: twoPackages(t), Base: ref})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Name == "tmp/":
			if h.Mode&0o1777 != 0o1777 || h.Uid != 0 {
				t.Errorf("/tmp has mode %o, uid %d; want 1777 and root", h.Mode, h.Uid)
			}
		case strings.HasPrefix(h.Name, "tmp/cache"):
			seen++
			if h.Uid != 1001 || h.Gid != 1002 {
				t.Errorf("%s is owned by %d:%d, want the base image's 1001:1002", h.Name, h.Uid, h.Gid)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no cache in the image's last layer")
	}
}

func TestImageOwner(t *testing.T) {
	for user, want := range map[string][2]int{"": {0, 0}, "65532": {65532, 65532}, "1001:1002": {1001, 1002}, "nonroot": {0, 0}, "10:x": {10, 0}} {
		img, err := ociimage.Scratch(nil, ociimage.Config{User: user})
		if err != nil {
			t.Fatal(err)
		}
		if got := imageOwner(img); got != want {
			t.Errorf("imageOwner(User %q) = %v, want %v", user, got, want)
		}
	}
}
