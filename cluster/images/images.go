package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// Names of the images, as they appear under the registry's chartpilot/ path.
const (
	Pause       = "pause"
	CoreDNS     = "coredns"
	OLM         = "olm"
	OPM         = "opm"
	HelloServer = "hello-server"
	// OLMv1 serves catalogd and operator-controller.
	OLMv1 = "olmv1"
)

// nonRoot is the user every image runs as unless a pod says otherwise.
const nonRoot = "65532:65532"

// Spec is one image: binaries from the toolchain's bin directory placed at
// paths in the image, and how it starts.
type Spec struct {
	Name string
	// Files maps a path in the image to a binary's name in the bin directory.
	Files map[string]string
	// Entrypoint of the image; empty for images only used with a command.
	Entrypoint []string
	// Env of the image.
	Env []string
}

// Specs are the images of a real node's cluster.
func Specs() []Spec {
	path := []string{"PATH=/bin"}
	return []Spec{
		{Name: Pause, Files: map[string]string{"pause": "pause"}, Entrypoint: []string{"/pause"}},
		{Name: CoreDNS, Files: map[string]string{"coredns": "coredns"}, Entrypoint: []string{"/coredns"}},
		// OLM's image serves both operators and is the util image of its
		// bundle unpack Job, which runs `/bin/cp -Rv /bin/cpb /util/cpb`.
		{Name: OLM, Files: map[string]string{"bin/olm": "olm", "bin/catalog": "catalog", "bin/cpb": "cpb", "bin/cp": "cp"}, Env: path},
		// opm serves catalog images (they are built FROM it) and extracts
		// bundles in the unpack Job, which runs `opm` from PATH; OLM probes
		// a catalog pod with grpc_health_probe.
		{Name: OPM, Files: map[string]string{"bin/opm": "opm", "bin/grpc_health_probe": "grpc_health_probe"}, Entrypoint: []string{"/bin/opm"}, Env: path},
		{Name: HelloServer, Files: map[string]string{"hello-server": "hello-server"}, Entrypoint: []string{"/hello-server"}},
	}
}

// OLMv1Spec is OLM v1's image, for clusters that run it: catalogd and
// operator-controller, each started by its pod's command.
func OLMv1Spec() Spec {
	return Spec{Name: OLMv1, Files: map[string]string{"bin/catalogd": "catalogd", "bin/operator-controller": "operator-controller"}, Env: []string{"PATH=/bin"}}
}

// Build builds one image from the binaries in binDir.
func Build(s Spec, binDir string) (v1.Image, error) {
	var entries []ociimage.Entry
	for dest, bin := range s.Files {
		data, err := os.ReadFile(filepath.Join(binDir, bin))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		entries = append(entries, ociimage.Entry{Name: dest, Data: data, Mode: 0o755})
	}
	// Programs that write temporary files find a /tmp; pods mount one
	// over it when the root file system is read-only.
	entries = append(entries, ociimage.Entry{Name: "tmp", Dir: true, Mode: 0o1777})
	layer, err := ociimage.Tar(entries)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	return ociimage.Scratch([][]byte{layer}, ociimage.Config{
		Platform:   v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Entrypoint: s.Entrypoint,
		Env:        s.Env,
		User:       nonRoot,
	})
}

// Refs maps an image name to its reference by digest in the registry.
type Refs map[string]string

// Publish builds every image of specs and pushes each to registry
// (host:port) under chartpilot/NAME:VERSION, returning references by
// digest: what pods use, so that a pod always runs exactly the image built
// here.
func Publish(ctx context.Context, registry, binDir, version string, specs []Spec) (Refs, error) {
	refs := Refs{}
	for _, s := range specs {
		img, err := Build(s, binDir)
		if err != nil {
			return nil, err
		}
		repo := Repository(registry, s.Name)
		digest, err := ociimage.Push(ctx, img, repo+":"+version)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		refs[s.Name] = repo + "@" + digest.String()
	}
	return refs, nil
}

// Repository is where an image lives in the registry.
func Repository(registry, name string) string { return registry + "/chartpilot/" + name }
