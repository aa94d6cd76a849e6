package bundle

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/scaffold"
)

// BundleImagePlatform is the platform recorded in bundle images. Bundle
// images hold only manifests and are never run; a fixed platform keeps
// their digest the same on every build machine.
var BundleImagePlatform = v1.Platform{OS: "linux", Architecture: "amd64"}

// BuildImage builds the bundle image without a container engine: the
// bundle directory's manifests/, metadata/ and tests/ at the image root, on
// an empty base, labelled with metadata/annotations.yaml (what
// bundle.Dockerfile builds with docker). The bundle is validated first;
// the same bundle always gives the same digest.
func BuildImage(dir string) (v1.Image, error) {
	if rep, err := Validate(ValidateOptions{Dir: dir}); err != nil {
		if rep != nil {
			var b strings.Builder
			for _, f := range rep.Findings {
				if f.Level == levelError {
					b.WriteString("\n  " + f.String())
				}
			}
			return nil, fmt.Errorf("bundle build %s: %w:%s", dir, err, b.String())
		}
		return nil, fmt.Errorf("bundle build: %w", err)
	}
	ann, err := ReadAnnotations(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle build: %w", err)
	}
	var entries []ociimage.Entry
	for _, sub := range []string{registryv1.ManifestsDir, registryv1.MetadataDir, "tests"} {
		if !exists(filepath.Join(dir, sub)) {
			continue
		}
		es, err := ociimage.DirEntries(os.DirFS(filepath.Join(dir, sub)), sub)
		if err != nil {
			return nil, fmt.Errorf("bundle build: %w", err)
		}
		entries = append(entries, es...)
	}
	layer, err := ociimage.Tar(entries)
	if err != nil {
		return nil, fmt.Errorf("bundle build: %w", err)
	}
	img, err := ociimage.Scratch([][]byte{layer}, ociimage.Config{Platform: BundleImagePlatform, Labels: ann})
	if err != nil {
		return nil, fmt.Errorf("bundle build: %w", err)
	}
	return img, nil
}

// operatorPackage is the runtime's main package, what the operator image
// runs (at scaffold.OperatorBinary): the Helm operator alone, without
// chartpilot's build-time commands.
const operatorPackage = "github.com/chartpilot/chartpilot/cmd/chartpilot-operator"

// operatorBinaryName is its file name, next to chartpilot in bin/.
var operatorBinaryName = path.Base(scaffold.OperatorBinary)

// OperatorImageOptions describe the operator image.
type OperatorImageOptions struct {
	// Dir is the project directory, holding watches.yaml and helm-charts/. Required.
	Dir string
	// Platforms are the image's platforms (default linux/<GOARCH of this
	// chartpilot>). With more than one, the result is an image index.
	Platforms []v1.Platform
	// Binaries maps "os/arch[/variant]" to a static chartpilot-operator
	// binary to put in that platform's image; it wins over every other source.
	Binaries map[string]string
	// Source is the chartpilot source (a module directory) to cross-build
	// the binary from when neither Binaries nor the binary next to this
	// chartpilot fit.
	Source string
	// Self is this chartpilot's executable (default os.Executable); a
	// static chartpilot-operator next to it (`make build` puts both in
	// bin/) is used for its own platform.
	Self string
	// Labels are added to each image's labels.
	Labels map[string]string
	// Log receives a line per binary chosen or built (default io.Discard).
	Log io.Writer
}

// selfPlatform is the platform this binary runs on.
func selfPlatform() v1.Platform { return v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH} }

// platformKey is "os/arch[/variant]".
func platformKey(p v1.Platform) string {
	k := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		k += "/" + p.Variant
	}
	return k
}

// ParsePlatforms reads "linux/amd64,linux/arm64[/v8]".
func ParsePlatforms(list []string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, s := range list {
		parts := strings.Split(strings.TrimSpace(s), "/")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("platform %q: want os/arch[/variant], e.g. linux/arm64", s)
		}
		p := v1.Platform{OS: parts[0], Architecture: parts[1]}
		if len(parts) == 3 {
			p.Variant = parts[2]
		}
		if slices.ContainsFunc(out, func(q v1.Platform) bool { return platformKey(q) == platformKey(p) }) {
			return nil, fmt.Errorf("platform %q given twice", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// BuildOperatorImage builds the operator image without a container engine:
// a static chartpilot-operator binary (the runtime alone), the project's
// watches.yaml and helm-charts/ under /opt/helm on an empty base, user
// 65532, entrypoint `chartpilot-operator run
// --watches-file=/opt/helm/watches.yaml`, as the scaffolded Dockerfile. One
// platform gives an image, several an index. The binary for a platform is,
// in order: the one Binaries names; the chartpilot-operator next to this
// chartpilot when it runs on that platform and is statically linked
// (CGO_ENABLED=0); one cross-built with `go build` from Source. Layers are
// reproducible: the same inputs give the same digest.
func BuildOperatorImage(ctx context.Context, opts OperatorImageOptions) (remote.Taggable, error) {
	if opts.Dir == "" {
		return nil, errors.New("image build: no project directory")
	}
	if len(opts.Platforms) == 0 {
		opts.Platforms = []v1.Platform{selfPlatform()}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Self == "" {
		if self, err := os.Executable(); err == nil {
			opts.Self = self
		}
	}
	app, err := operatorFiles(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("image build: %w", err)
	}
	appLayer, err := ociimage.Tar(app)
	if err != nil {
		return nil, fmt.Errorf("image build: %w", err)
	}
	var imgs []v1.Image
	for _, p := range opts.Platforms {
		bin, err := operatorBinary(ctx, opts, p)
		if err != nil {
			return nil, fmt.Errorf("image build %s: %w", platformKey(p), err)
		}
		binLayer, err := ociimage.Tar([]ociimage.Entry{{Name: scaffold.OperatorBinary, Data: bin, Mode: 0o755}})
		if err != nil {
			return nil, err
		}
		img, err := ociimage.Scratch([][]byte{binLayer, appLayer}, ociimage.Config{
			Platform:   p,
			Labels:     opts.Labels,
			Entrypoint: []string{scaffold.OperatorBinary, "run", "--watches-file=" + path.Join(scaffold.OperatorHome, scaffold.WatchesFile)},
			Env:        []string{"HOME=" + scaffold.OperatorHome, "PATH=" + path.Dir(scaffold.OperatorBinary)},
			User:       fmt.Sprintf("%d:%d", scaffold.OperatorUser, scaffold.OperatorUser),
			WorkingDir: scaffold.OperatorHome,
		})
		if err != nil {
			return nil, fmt.Errorf("image build %s: %w", platformKey(p), err)
		}
		imgs = append(imgs, img)
	}
	if len(imgs) == 1 {
		return imgs[0], nil
	}
	return ociimage.Index(imgs)
}

// operatorFiles are the image's files besides the binary: watches.yaml and
// helm-charts/ under /opt/helm (owned by the operator's user, as Helm
// writes its cache under HOME), a /tmp, and a passwd entry for the user.
func operatorFiles(dir string) ([]ociimage.Entry, error) {
	watches, err := os.ReadFile(filepath.Join(dir, scaffold.WatchesFile))
	if err != nil {
		return nil, fmt.Errorf("the operator image needs %s: %w", scaffold.WatchesFile, err)
	}
	if _, err := scaffold.LoadWatches(dir); err != nil {
		return nil, err
	}
	charts := filepath.Join(dir, "helm-charts")
	if !exists(charts) {
		return nil, fmt.Errorf("the operator image needs the charts: %s does not exist", charts)
	}
	chartEntries, err := ociimage.DirEntries(os.DirFS(charts), path.Join(scaffold.OperatorHome, "helm-charts"))
	if err != nil {
		return nil, err
	}
	home, user := scaffold.OperatorHome, scaffold.OperatorUser
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", user, user, home)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", user)
	entries := []ociimage.Entry{
		{Name: "etc/passwd", Data: []byte(passwd)},
		{Name: "etc/group", Data: []byte(group)},
		{Name: "tmp", Dir: true, Mode: 0o1777},
		{Name: home, Dir: true, UID: user, GID: user},
		{Name: path.Join(home, scaffold.WatchesFile), Data: watches},
	}
	return append(entries, chartEntries...), nil
}

// ErrNoBinary means no static chartpilot-operator binary could be found or
// built for a platform.
var ErrNoBinary = errors.New("no chartpilot-operator binary for the platform")

// operatorBinary picks or builds the chartpilot-operator binary for p.
func operatorBinary(ctx context.Context, opts OperatorImageOptions, p v1.Platform) ([]byte, error) {
	key := platformKey(p)
	if file, ok := opts.Binaries[key]; ok {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if err := checkStaticELF(data, p); err != nil {
			return nil, fmt.Errorf("binary %s: %w", file, err)
		}
		fmt.Fprintf(opts.Log, "%s: using %s\n", key, file)
		return data, nil
	}
	if opts.Self != "" && p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH {
		sibling := filepath.Join(filepath.Dir(opts.Self), operatorBinaryName)
		if data, err := os.ReadFile(sibling); err == nil && checkStaticELF(data, p) == nil && isOperatorBinary(sibling) {
			fmt.Fprintf(opts.Log, "%s: using %s\n", key, sibling)
			return data, nil
		}
	}
	if opts.Source == "" {
		return nil, fmt.Errorf("%w: no static %s next to this chartpilot (`make build` puts one there); pass --chartpilot-source (the chartpilot module) to cross-build one, or --binary %s=FILE",
			ErrNoBinary, operatorBinaryName, key)
	}
	return crossBuild(ctx, opts.Source, operatorPackage, p, opts.Log)
}

// isOperatorBinary tells a chartpilot-operator build from another Go
// program, e.g. the chartpilot CLI.
func isOperatorBinary(file string) bool {
	bi, err := buildinfo.ReadFile(file)
	return err == nil && bi.Path == operatorPackage
}

// elfMachines maps GOARCH to ELF machine types.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// checkStaticELF makes sure data is a statically linked executable for p:
// a scratch image has no dynamic loader or C library.
func checkStaticELF(data []byte, p v1.Platform) error {
	if p.OS != "linux" {
		return fmt.Errorf("only linux images are supported, not %s", p.OS)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if want, ok := elfMachines[p.Architecture]; !ok || f.Machine != want {
		return fmt.Errorf("built for %s, not %s", f.Machine, p.Architecture)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (build with CGO_ENABLED=0)")
		}
	}
	return nil
}

// crossBuild builds pkg of the module in source for p: static, without
// paths or VCS stamps, so that the same source gives the same binary.
func crossBuild(ctx context.Context, source, pkg string, p v1.Platform, log io.Writer) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "chartpilot-image-build-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, pkg)
	cmd.Dir = source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" {
		switch p.Architecture {
		case "arm":
			cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
		case "amd64":
			cmd.Env = append(cmd.Env, "GOAMD64="+p.Variant)
		}
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	fmt.Fprintf(log, "%s: go build %s in %s\n", platformKey(p), pkg, source)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s in %s: %w\n%s", pkg, platformKey(p), source, err, strings.TrimSpace(stderr.String()))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	if err := checkStaticELF(data, p); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", platformKey(p), err)
	}
	return data, nil
}
