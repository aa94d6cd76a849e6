package chartpilot

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/catalog/render"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/cmd/version"
	"github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/testbin"
	"github.com/chartpilot/chartpilot/scaffold"
)

var update = flag.Bool("update", false, "rewrite the example operator's project files at the repository's top level")

// The repository's top level is the example operator's project, as
// `chartpilot init` writes it from helm-charts/hello (see the Makefile).
const (
	repoRoot = "."
	// projectName is the project's (and the demo's) name.
	projectName = "hello-operator"
)

// initTrees and initFiles are what init writes that the top level holds;
// its Makefile (which includes operator.mk), .gitignore and .dockerignore
// are the repository's own.
var (
	initTrees = []string{"config", "helm-charts"}
	initFiles = []string{"Dockerfile", scaffold.ProjectFile, scaffold.WatchesFile, scaffold.OperatorMakefile}
)

const (
	catalogDockerfile = "catalog.Dockerfile"
	dockerignore      = ".dockerignore"
)

// makeVar reads a variable's default (NAME ?= value) as make sees it: the
// top-level Makefile's, else that of operator.mk, which it includes after
// its own.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	def := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` \?= (.*)$`)
	for _, file := range []string{"Makefile", scaffold.OperatorMakefile} {
		if m := def.FindSubmatch(readFile(t, filepath.Join(repoRoot, file))); m != nil {
			return strings.TrimSpace(string(m[1]))
		}
	}
	t.Fatalf("neither the Makefile nor %s defines %s ?= ...", scaffold.OperatorMakefile, name)
	return ""
}

// initProject runs init on the example chart as a user would, into a new
// directory.
func initProject(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	chartDir := filepath.Join(tmp, "chart", ExampleChart)
	if err := WriteExampleChart(chartDir); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, projectName)
	var out bytes.Buffer
	if err := scaffold.Init(scaffold.Options{APIOptions: scaffold.APIOptions{Chart: chartDir}, Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 0 {
		t.Errorf("init of the example chart warned:\n%s", out.String())
	}
	return dir
}

// TestRepositoryProject keeps the top level's project files equal to what
// `chartpilot init` writes from helm-charts/hello and `make bundle` writes
// from them. `go test . -update` (or `make generate`) rewrites them.
func TestRepositoryProject(t *testing.T) {
	dir := initProject(t)
	for _, tree := range initTrees {
		golden.Check(t, filepath.Join(repoRoot, tree), golden.Files(t, filepath.Join(dir, tree)), *update)
	}
	for _, name := range initFiles {
		golden.File(t, filepath.Join(repoRoot, name), readFile(t, filepath.Join(dir, name)), *update)
	}

	// What `make bundle` writes beside the bundle, with the Makefile's defaults.
	_, err := bundle.Generate(context.Background(), bundle.GenerateOptions{
		Dir: dir, OutputDir: makeVar(t, "BUNDLE_DIR"), Version: makeVar(t, "VERSION"), Builder: version.Builder(),
	})
	if err != nil {
		t.Fatal(err)
	}
	bundleDockerfile := readFile(t, filepath.Join(dir, bundle.DockerfileName))
	golden.File(t, filepath.Join(repoRoot, bundle.DockerfileName), bundleDockerfile, *update)

	var catalogDF bytes.Buffer
	if err := oci.WriteDockerfile(&catalogDF, oci.DockerfileOptions{CatalogDir: makeVar(t, "CATALOG_DIR")}); err != nil {
		t.Fatal(err)
	}
	golden.File(t, filepath.Join(repoRoot, catalogDockerfile), catalogDF.Bytes(), *update)

	contents := map[string][]byte{"Dockerfile": readFile(t, filepath.Join(dir, "Dockerfile")), bundle.DockerfileName: bundleDockerfile, catalogDockerfile: catalogDF.Bytes()}
	ignore, err := dockerignoreFor(contents)
	if err != nil {
		t.Fatal(err)
	}
	golden.File(t, filepath.Join(repoRoot, dockerignore), ignore, *update)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// dockerignoreFor is a .dockerignore that lets into the build context
// exactly what the Dockerfiles copy: the top level also holds the Go
// sources and whatever .cache/ and bin/ hold, which no image needs.
func dockerignoreFor(dockerfiles map[string][]byte) ([]byte, error) {
	var sources []string
	for name, data := range dockerfiles {
		s, err := copySources(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sources = append(sources, s...)
	}
	slices.Sort(sources)
	var b bytes.Buffer
	b.WriteString("# Generated by `go test . -update` from what Dockerfile, bundle.Dockerfile\n# and catalog.Dockerfile copy: nothing else goes into their build context.\n*\n")
	for _, s := range slices.Compact(sources) {
		fmt.Fprintf(&b, "!%s\n", s)
	}
	return b.Bytes(), nil
}

// copySources are the build-context paths of a Dockerfile's COPY and ADD
// instructions (not those copying from another stage).
func copySources(dockerfile []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || (!strings.EqualFold(fields[0], "COPY") && !strings.EqualFold(fields[0], "ADD")) {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			if strings.HasPrefix(args[0], "--from=") {
				args = nil
			} else {
				args = args[1:]
			}
		}
		if len(args) == 1 {
			return nil, fmt.Errorf("%q has no destination", sc.Text())
		}
		for _, src := range args[:max(len(args)-1, 0)] {
			out = append(out, strings.TrimSuffix(filepath.ToSlash(filepath.Clean(src)), "/"))
		}
	}
	return out, sc.Err()
}

func TestCopySources(t *testing.T) {
	tests := []struct {
		name, dockerfile string
		want             []string
	}{
		{"copy and add", "FROM x\nCOPY a.yaml ${HOME}/a.yaml\nADD dir/ /configs\n", []string{"a.yaml", "dir"}},
		{"several sources and flags", "COPY --chown=1:1 a b/c/ /dst/\n", []string{"a", "b/c"}},
		{"from another stage", "COPY --from=build /bin/x /x\nRUN cp a b\n", nil},
		{"lower case", "copy ./a /a\n", []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := copySources([]byte(tt.dockerfile))
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("copySources = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := copySources([]byte("COPY a\n")); err == nil {
		t.Error("a COPY without destination is accepted")
	}
}

// TestMakeTargets runs the operator's targets with the top-level Makefile
// on a copy of the project files, as a user who cloned the repository would
// (without a container engine), against a registry: the bundle validates,
// the operator, bundle and catalog images are built and pushed, the catalog
// publishes the pushed bundle, and no committed file changes.
func TestMakeTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds chartpilot")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	tmp := t.TempDir()
	bin := testbin.Chartpilot(t)
	dir := filepath.Join(tmp, "project")
	committed := map[string][]byte{}
	for _, name := range append(append(slices.Clone(initTrees), initFiles...), "Makefile", bundle.DockerfileName, catalogDockerfile, dockerignore) {
		for rel, data := range golden.Files(t, filepath.Join(repoRoot, name)) {
			p := filepath.ToSlash(filepath.Join(name, rel))
			if rel == "." {
				p = name
			}
			committed[p] = data
		}
	}
	if err := writeTree(dir, committed); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	// The catalog image's base: any image in the registry will do.
	opm := host + "/opm:test"
	if _, err := ociimage.Push(context.Background(), empty.Image, opm); err != nil {
		t.Fatal(err)
	}
	base, v := host+"/"+projectName, makeVar(t, "VERSION")
	cache := filepath.Join(tmp, "cache")
	// -o build: the binary is built; the copy has no Go sources.
	img := base + ":v" + v
	for _, targets := range [][]string{{"docker-build", "docker-push", "bundle", "bundle-build", "bundle-push", "catalog-build", "catalog-push"}, {"catalog-build"}} {
		args := append([]string{"-o", "build", "CHARTPILOT=" + bin, "IMAGE_TAG_BASE=" + base, "IMG=" + img, "OPM_IMG=" + opm}, targets...)
		cmd := exec.Command("make", args...)
		cmd.Dir = dir
		// Not the jobs of a make that runs this test (make test).
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") || strings.HasPrefix(kv, "MFLAGS=")
		})
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(targets, " "), err, out)
		}
	}
	after := golden.Files(t, dir)
	for p, data := range committed {
		if !bytes.Equal(after[p], data) {
			t.Errorf("make changed the committed %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, makeVar(t, "BUNDLE_DIR"), "manifests", projectName+".clusterserviceversion.yaml")); err != nil {
		t.Errorf("make bundle: %v", err)
	}
	catalogDir := filepath.Join(dir, makeVar(t, "CATALOG_DIR"))
	if err := validate.FS(context.Background(), catalogDir, os.DirFS(catalogDir)); err != nil {
		t.Errorf("make catalog-build left an invalid catalog: %v", err)
	}
	var rendered bytes.Buffer
	if err := render.Render(context.Background(), &rendered, os.DirFS(catalogDir), render.Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "image: " + base + "-bundle:v" + v; !strings.Contains(rendered.String(), want) {
		t.Errorf("the catalog does not publish the bundle as %q:\n%s", want, rendered.String())
	}
	for _, ref := range []string{img, base + "-bundle:v" + v, base + "-catalog:v" + v} {
		if _, err := ociimage.Resolve(context.Background(), ref); err != nil {
			t.Errorf("image %s was not pushed: %v", ref, err)
		}
	}
}

func writeTree(dir string, files map[string][]byte) error {
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// A scaffolded project's .dockerignore lets into the build context what its
// Dockerfile, bundle.Dockerfile and catalog.Dockerfile copy, with the
// default bundle and catalog directories.
func TestScaffoldDockerignoreLetsInWhatDockerfilesCopy(t *testing.T) {
	dir := initProject(t)
	if _, err := bundle.Generate(context.Background(), bundle.GenerateOptions{Dir: dir, Version: "0.1.0"}); err != nil {
		t.Fatal(err)
	}
	var catalogDF bytes.Buffer
	if err := oci.WriteDockerfile(&catalogDF, oci.DockerfileOptions{}); err != nil {
		t.Fatal(err)
	}
	var allowed []string
	for _, line := range strings.Split(string(readFile(t, filepath.Join(dir, dockerignore))), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "!"); ok {
			allowed = append(allowed, strings.TrimSuffix(p, "/"))
		}
	}
	for name, data := range map[string][]byte{
		"Dockerfile": readFile(t, filepath.Join(dir, "Dockerfile")), bundle.DockerfileName: readFile(t, filepath.Join(dir, bundle.DockerfileName)), catalogDockerfile: catalogDF.Bytes(),
	} {
		sources, err := copySources(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range sources {
			if !slices.ContainsFunc(allowed, func(a string) bool { return src == a || strings.HasPrefix(src, a+"/") }) {
				t.Errorf("%s copies %s, which .dockerignore (%v) leaves out of the build context", name, src, allowed)
			}
		}
	}
}
