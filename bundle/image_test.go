package bundle

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/scaffold"
)

// startRegistry serves go-containerregistry's registry on 127.0.0.1 and
// returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// imageFiles lists the files of an image's flattened filesystem with their
// tar headers.
func imageFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h
	}
}

func digestOf(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestBuildImage(t *testing.T) {
	// Two projects from the same input: the same bundle, the same digest.
	var digests []v1.Hash
	var img v1.Image
	for range 2 {
		dir := newProject(t, "webapp", scaffold.Options{})
		mustGenerate(t, dir, GenerateOptions{CreatedAt: &fixedTime})
		var err error
		if img, err = BuildImage(filepath.Join(dir, "bundle")); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, digestOf(t, img))
	}
	if digests[0] != digests[1] {
		t.Errorf("digests differ for the same bundle: %v", digests)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.Labels[registryv1.AnnotationMediaType] != registryv1.MediaTypeRegistryV1 || cf.Config.Labels[registryv1.AnnotationPackage] != "webapp-operator" ||
		cf.Config.Labels[registryv1.AnnotationTestConfig] != "tests/scorecard/" {
		t.Errorf("labels: %v", cf.Config.Labels)
	}
	files := imageFiles(t, img)
	for _, want := range []string{"manifests/webapp-operator.clusterserviceversion.yaml", "manifests/charts.example.com_webapps.yaml", registryv1.AnnotationsFile, registryv1.ScorecardConfigFile} {
		if h, ok := files[want]; !ok || h.ModTime.Unix() != 0 && !h.ModTime.IsZero() {
			t.Errorf("%s: %+v", want, h)
		}
	}
}

func TestBuildImageRefusesAnInvalidBundle(t *testing.T) {
	dir := generatedProject(t)
	replaceInFile(t, filepath.Join(dir, "bundle", registryv1.AnnotationsFile), "registry+v1", "helm")
	_, err := BuildImage(filepath.Join(dir, "bundle"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), registryv1.AnnotationsFile) {
		t.Fatalf("error = %v, want ErrInvalid naming %s", err, registryv1.AnnotationsFile)
	}
}

// Build, keep in the store, push to a registry on loopback, pull back: the
// content round-trips, and the catalog publishes the pulled image.
func TestBundleImageRegistryRoundTrip(t *testing.T) {
	host := startRegistry(t)
	dir := generatedProject(t)
	bundleDir := filepath.Join(dir, "bundle")
	img, err := BuildImage(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/webapp-operator-bundle:v0.1.0"
	store := ociimage.Store{Dir: filepath.Join(t.TempDir(), "store")}
	if err := store.Put(img, ref); err != nil {
		t.Fatal(err)
	}
	pushed, err := store.Push(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != digestOf(t, img) {
		t.Errorf("pushed %s, built %s", pushed, digestOf(t, img))
	}

	pulled, err := ociimage.Pull(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pulled")
	if err := ociimage.ExtractDir(pulled, "", out); err != nil {
		t.Fatal(err)
	}
	want, got := golden.Files(t, bundleDir), golden.Files(t, out)
	if !slices.Equal(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got))) {
		t.Fatalf("pulled files %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for name := range want {
		if !bytes.Equal(want[name], got[name]) {
			t.Errorf("%s differs after the round trip", name)
		}
	}

	cat := filepath.Join(t.TempDir(), "catalog")
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: cat, FromBundle: bundleDir}); err != nil {
		t.Fatal(err)
	}
	if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: cat, BundleImage: ref}); err != nil {
		t.Fatal(err)
	}
	if err := validate.FS(t.Context(), cat, os.DirFS(cat)); err != nil {
		t.Fatal(err)
	}

	// An unreachable registry: a clear error naming the reference.
	if _, err := store.Push(t.Context(), "127.0.0.1:1/nothing:v1"); err == nil {
		t.Error("pushed an image that was never built")
	}
	if err := store.Put(img, "127.0.0.1:1/webapp:v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Push(t.Context(), "127.0.0.1:1/webapp:v1"); err == nil || !strings.Contains(err.Error(), "pushing 127.0.0.1:1/webapp:v1") {
		t.Errorf("push to an unreachable registry: %v", err)
	}
}

// fakeBinaries cross-builds testdata/fakebin, a small static program
// standing in for chartpilot, for each platform.
func fakeBinaries(t *testing.T, platforms ...v1.Platform) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range platforms {
		data, err := crossBuild(t.Context(), ".", "./testdata/fakebin", p, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "fakebin")
		if err := os.WriteFile(file, data, 0o755); err != nil {
			t.Fatal(err)
		}
		out[platformKey(p)] = file
	}
	return out
}

func TestBuildOperatorImage(t *testing.T) {
	amd64, arm64 := v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"}
	bins := fakeBinaries(t, amd64, arm64)
	dir := newProject(t, "webapp", scaffold.Options{})
	opts := OperatorImageOptions{Dir: dir, Platforms: []v1.Platform{amd64, arm64}, Binaries: bins}

	built, err := BuildOperatorImage(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	idx, ok := built.(v1.ImageIndex)
	if !ok {
		t.Fatalf("two platforms gave a %T, want an index", built)
	}
	again, err := BuildOperatorImage(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(t, idx) != digestOf(t, again.(v1.ImageIndex)) {
		t.Error("the same inputs gave two digests")
	}

	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" {
		t.Fatalf("index manifests: %+v", im.Manifests)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := dockerfileRun(t, dir), cf.Config; !slices.Equal(got.Entrypoint, want.Entrypoint) || got.User != want.User {
			t.Errorf("the scaffolded Dockerfile runs %v as %s; the image %v as %s", got.Entrypoint, got.User, want.Entrypoint, want.User)
		}
		if cf.Config.User != "65532:65532" || cf.Architecture != d.Platform.Architecture ||
			!slices.Equal(cf.Config.Entrypoint, []string{scaffold.OperatorBinary, "run", "--watches-file=/opt/helm/watches.yaml"}) {
			t.Errorf("%s config: user %q arch %q entrypoint %v", d.Platform.Architecture, cf.Config.User, cf.Architecture, cf.Config.Entrypoint)
		}
		files := imageFiles(t, img)
		for _, want := range []string{"usr/local/bin/chartpilot-operator", "opt/helm/watches.yaml", "opt/helm/helm-charts/webapp/Chart.yaml", "opt/helm/helm-charts/webapp/templates/deployment.yaml"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s: no %s", d.Platform.Architecture, want)
			}
		}
		if h := files["usr/local/bin/chartpilot-operator"]; h == nil || h.Mode != 0o755 {
			t.Errorf("binary header: %+v", h)
		}
		if h := files["opt/helm"]; h == nil || h.Uid != scaffold.OperatorUser {
			t.Errorf("/opt/helm is not the operator user's: %+v", h)
		}
	}

	// Push the index to a registry and pull one platform back.
	host := startRegistry(t)
	ref := host + "/webapp-operator:v0.1.0"
	if _, err := ociimage.Push(t.Context(), idx, ref); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, remote.WithPlatform(arm64))
	if err != nil {
		t.Fatal(err)
	}
	if cf, err := img.ConfigFile(); err != nil || cf.Architecture != "arm64" {
		t.Errorf("pulled linux/arm64: %v %v", cf, err)
	}
}

func TestOperatorBinary(t *testing.T) {
	amd64, arm64 := v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"}
	bins := fakeBinaries(t, amd64)
	tests := []struct {
		name     string
		opts     OperatorImageOptions
		platform v1.Platform
		// wantErr is a substring of the error, empty for success
		wantErr string
		// wantArch is the ELF machine of the chosen binary
		wantArch elf.Machine
	}{{
		name:     "--binary wins",
		opts:     OperatorImageOptions{Binaries: bins},
		platform: amd64,
		wantArch: elf.EM_X86_64,
	}, {
		name:     "--binary for another architecture is refused",
		opts:     OperatorImageOptions{Binaries: map[string]string{"linux/arm64": bins["linux/amd64"]}},
		platform: arm64,
		wantErr:  "built for EM_X86_64, not arm64",
	}, {
		name:     "nothing next to a test binary: no source, no binary",
		opts:     OperatorImageOptions{Self: os.Args[0]},
		platform: amd64,
		wantErr:  "pass --chartpilot-source",
	}, {
		name:     "a static binary next to chartpilot that is not chartpilot-operator is not used",
		opts:     OperatorImageOptions{Self: besideChartpilot(t, bins["linux/amd64"])},
		platform: amd64,
		wantErr:  "pass --chartpilot-source",
	}, {
		name:     "a broken source fails with go build's message",
		opts:     OperatorImageOptions{Source: t.TempDir()},
		platform: arm64,
		wantErr:  "go build " + operatorPackage + " for linux/arm64",
	}, {
		name:     "windows is refused",
		opts:     OperatorImageOptions{Binaries: map[string]string{"windows/amd64": bins["linux/amd64"]}},
		platform: v1.Platform{OS: "windows", Architecture: "amd64"},
		wantErr:  "only linux images",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Log = io.Discard
			data, err := operatorBinary(t.Context(), tt.opts, tt.platform)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != tt.wantArch {
				t.Errorf("machine %s, want %s", f.Machine, tt.wantArch)
			}
		})
	}
}

// dockerfileRun reads the ENTRYPOINT and USER of a project's Dockerfile.
func dockerfileRun(t *testing.T, dir string) v1.Config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var c v1.Config
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			if err := json.Unmarshal([]byte(v), &c.Entrypoint); err != nil {
				t.Fatalf("Dockerfile ENTRYPOINT %s: %v", v, err)
			}
		}
		if v, ok := strings.CutPrefix(line, "USER "); ok {
			c.User = v
		}
	}
	return c
}

// besideChartpilot copies bin to a new directory as chartpilot-operator and
// returns the path of a chartpilot next to it.
func besideChartpilot(t *testing.T, bin string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, operatorBinaryName), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "chartpilot")
}

// The chartpilot-operator that `make build` puts next to chartpilot goes
// into the image of this machine's platform: no cross-build.
func TestOperatorBinaryNextToChartpilot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/chartpilot-operator")
	}
	p := selfPlatform()
	built, err := crossBuild(t.Context(), "..", operatorPackage, p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "built")
	if err := os.WriteFile(file, built, 0o755); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	data, err := operatorBinary(t.Context(), OperatorImageOptions{Self: besideChartpilot(t, file), Log: &log}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, built) || !strings.Contains(log.String(), "using") {
		t.Errorf("the binary next to chartpilot was not used: %s", log.String())
	}
}

func TestParsePlatforms(t *testing.T) {
	ps, err := ParsePlatforms([]string{"linux/amd64", "linux/arm64/v8"})
	if err != nil || len(ps) != 2 || ps[1].Variant != "v8" {
		t.Fatalf("%+v %v", ps, err)
	}
	for _, bad := range [][]string{{"linux"}, {"linux/amd64", "linux/amd64"}, {"/amd64"}} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// --use-image-digests pins the operator image to the digest its registry
// serves.
func TestGeneratePinsImageDigests(t *testing.T) {
	host := startRegistry(t)
	layer, err := ociimage.Tar([]ociimage.Entry{{Name: "f", Data: []byte("operator")}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Scratch([][]byte{layer}, ociimage.Config{Platform: BundleImagePlatform})
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/op:v0.1.0"
	if _, err := ociimage.Push(t.Context(), img, ref); err != nil {
		t.Fatal(err)
	}
	dir := newProject(t, "webapp", scaffold.Options{})
	mustGenerate(t, dir, GenerateOptions{Images: map[string]string{"controller": ref}, UseImageDigests: true})
	csv := readCSV(t, dir)
	want := host + "/op@" + digestOf(t, img).String()
	got := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image
	manager := csv.Spec.RelatedImages[slices.IndexFunc(csv.Spec.RelatedImages, func(r v1alpha1.RelatedImage) bool { return r.Name == "manager" })]
	if got != want || manager.Image != want || csv.Annotations[AnnotationContainerImage] != want {
		t.Errorf("image %s, relatedImages %v, containerImage %s; want %s", got, csv.Spec.RelatedImages, csv.Annotations[AnnotationContainerImage], want)
	}

	// An image the registry does not have: a clear error, the bundle kept.
	before := bundleOutput(t, dir)
	_, err = generate(t, dir, GenerateOptions{Version: "0.2.0", Images: map[string]string{"controller": host + "/op:missing"}, UseImageDigests: true})
	if err == nil || !strings.Contains(err.Error(), "--use-image-digests: resolving "+host+"/op:missing") {
		t.Fatalf("error = %v", err)
	}
	if after := bundleOutput(t, dir); len(after) != len(before) || !bytes.Equal(after["bundle/manifests/webapp-operator.clusterserviceversion.yaml"], before["bundle/manifests/webapp-operator.clusterserviceversion.yaml"]) {
		t.Error("a failed generate changed the bundle")
	}
}

// dockerfileLabels reads the LABEL lines of a Dockerfile as docker does
// the double-quoted words bundle.Dockerfile writes: a backslash takes the
// next character as is.
func dockerfileLabels(t *testing.T, data []byte) map[string]string {
	t.Helper()
	labels := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		kv, ok := strings.CutPrefix(line, "LABEL ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			t.Fatalf("LABEL %s: the value is not one double-quoted word", kv)
		}
		var b strings.Builder
		for i := 1; i < len(v)-1; i++ {
			if v[i] == '\\' {
				i++
			} else if v[i] == '"' {
				t.Fatalf("LABEL %s: an unescaped quote ends the word early", kv)
			}
			b.WriteByte(v[i])
		}
		labels[k] = b.String()
	}
	return labels
}

// bundle.Dockerfile builds the image bundle build makes: its labels read
// back as the image's, whatever a value holds (a space, a quote, a $ that
// docker would expand).
func TestDockerfileLabelsAreTheImages(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	const builder = `chartpilot 1.0 "dev" $HOME\x`
	mustGenerate(t, dir, GenerateOptions{CreatedAt: &fixedTime, Builder: builder})
	img, err := BuildImage(filepath.Join(dir, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, DockerfileName))
	if err != nil {
		t.Fatal(err)
	}
	got := dockerfileLabels(t, data)
	if !maps.Equal(got, cf.Config.Labels) {
		t.Errorf("%s labels %v, the image's %v", DockerfileName, got, cf.Config.Labels)
	}
	if got[registryv1.AnnotationMetricsBuilder] != builder {
		t.Errorf("builder label %q, want %q", got[registryv1.AnnotationMetricsBuilder], builder)
	}
}
