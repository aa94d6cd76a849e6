package scaffold

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/rbac"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func chartDir(name string) string { return filepath.Join("..", "chart", "testdata", "charts", name) }

// projectFiles reads every file of a project, except packaged charts (whose
// archives hold timestamps): those are listed by name only.
func projectFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := golden.Files(t, dir)
	// The warnings are the run's (the golden init.out holds them), not
	// the project's: its .gitignore leaves them out.
	delete(out, WarningsFile)
	for rel := range out {
		if strings.HasSuffix(rel, ".tgz") {
			out[rel] = []byte("(packaged chart)\n")
		}
	}
	return out
}

// checkGolden compares a project with testdata/golden/<name>, or rewrites
// the golden copy with -update.
func checkGolden(t *testing.T, name string, files map[string][]byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), files, *update)
}

// checkProject checks what every project must satisfy: each YAML file
// parses, and kustomize builds config/default, config/manifests and
// config/shards.
func checkProject(t *testing.T, dir string) {
	t.Helper()
	for rel, data := range projectFiles(t, dir) {
		if !strings.HasSuffix(rel, ".yaml") || strings.HasPrefix(rel, "helm-charts/") {
			continue
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			var v any
			if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
				t.Errorf("%s document %d: %v", rel, i, err)
			}
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, target := range []string{"config/default", "config/manifests", ShardsDir} {
		resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(dir, target))
		if err != nil {
			t.Errorf("kustomize build %s: %v", target, err)
			continue
		}
		if _, err := resMap.AsYaml(); err != nil {
			t.Errorf("kustomize build %s: %v", target, err)
		}
	}
}

func TestInitGolden(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{{
		name: "webapp-operator",
		opts: Options{APIOptions: APIOptions{Chart: chartDir("webapp")}},
	}, {
		name: "umbrella-operator",
		opts: Options{APIOptions: APIOptions{Chart: chartDir("umbrella"), Group: "cache", Version: "v1beta1", Kind: "Stack"}, Domain: "acme.io"},
	}, {
		name: "validated-operator",
		opts: Options{APIOptions: APIOptions{Chart: chartDir("validated")}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.name)
			tt.opts.Dir = dir
			var out bytes.Buffer
			tt.opts.Out = &out
			if err := Init(tt.opts); err != nil {
				t.Fatal(err)
			}
			checkProject(t, dir)
			files := projectFiles(t, dir)
			files["init.out"] = out.Bytes()
			checkGolden(t, tt.name, files)
			entries, err := os.ReadDir(filepath.Dir(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("init left %d entries beside the project, want none", len(entries)-1)
			}
		})
	}
}

func TestCreateAPIGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "multi-operator")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Chart: chartDir("clusterwide"), Kind: "NodeReader"}, Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	checkProject(t, dir)
	files := projectFiles(t, dir)
	files["create-api.out"] = out.Bytes()
	checkGolden(t, "multi-operator", files)

	// The same kind again is refused, and the project is unchanged.
	before := projectFiles(t, dir)
	err := CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Chart: chartDir("widgets"), Kind: "NodeReader"}, Dir: dir})
	if !errors.Is(err, ErrAPIExists) {
		t.Fatalf("CreateAPI of an existing kind: %v, want ErrAPIExists", err)
	}
	after := projectFiles(t, dir)
	if len(before) != len(after) {
		t.Errorf("a refused create api changed the project: %d files, then %d", len(before), len(after))
	}
}

func TestInitRefusals(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the target directory.
		setup   func(t *testing.T, dir string)
		opts    Options
		wantErr error
		// wantMsg is a substring of the error.
		wantMsg string
		// leftBehind lists the entries the target must hold afterwards (nil: absent).
		leftBehind []string
	}{{
		name:    "removed APIs fail the init and leave nothing",
		opts:    Options{APIOptions: APIOptions{Chart: chartDir("legacy")}},
		wantErr: rbac.ErrRemovedAPI,
		wantMsg: "legacy/templates/deployment.yaml: extensions/v1beta1 Deployment is no longer served since Kubernetes 1.16: use apiVersion apps/v1",
	}, {
		name:    "a removed API in crds/ fails the init and leaves nothing",
		opts:    Options{APIOptions: APIOptions{Chart: chartDir("oldcrds")}},
		wantErr: rbac.ErrRemovedAPI,
		wantMsg: "oldcrds/crds/gadgets.yaml: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served since Kubernetes 1.22: use apiVersion apiextensions.k8s.io/v1",
	}, {
		name:       "non-empty directory",
		setup:      func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "notes.txt"), "mine") },
		opts:       Options{APIOptions: APIOptions{Chart: chartDir("webapp")}},
		wantErr:    ErrNotEmpty,
		leftBehind: []string{"notes.txt"},
	}, {
		name:    "kind not CamelCase",
		opts:    Options{APIOptions: APIOptions{Chart: chartDir("webapp"), Kind: "webApp"}},
		wantMsg: `kind "webApp" must be CamelCase`,
	}, {
		name:    "bad version",
		opts:    Options{APIOptions: APIOptions{Chart: chartDir("webapp"), Version: "1.0"}},
		wantMsg: `version "1.0" is not a Kubernetes API version`,
	}, {
		name:    "missing chart",
		opts:    Options{APIOptions: APIOptions{Chart: chartDir("nope")}},
		wantMsg: "loading chart",
	}, {
		name:       "an old target k8s version accepts the removed APIs' era",
		opts:       Options{APIOptions: APIOptions{Chart: chartDir("legacy")}, KubeVersion: "1.15"},
		leftBehind: []string{".chartpilot", ".dockerignore", ".gitignore", "Dockerfile", "Makefile", "PROJECT", "config", "helm-charts", OperatorMakefile, "watches.yaml"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "op")
			if tt.setup != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				tt.setup(t, dir)
			}
			tt.opts.Dir = dir
			err := Init(tt.opts)
			if tt.wantErr == nil && tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("Init() = %v, want %v", err, tt.wantErr)
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("Init() = %v, want an error containing %q", err, tt.wantMsg)
				}
			}
			var got []string
			if entries, err := os.ReadDir(dir); err == nil {
				for _, e := range entries {
					got = append(got, e.Name())
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.leftBehind, ",") {
				t.Errorf("target holds %q, want %q", got, tt.leftBehind)
			}
			if entries, _ := os.ReadDir(parent); len(entries) > 1 || (len(entries) == 1 && entries[0].Name() != "op") {
				t.Errorf("temporary files left beside the target: %v", entries)
			}
		})
	}
}

func TestInitForce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notes.txt"), "mine")
	writeFile(t, filepath.Join(dir, "Makefile"), "old")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir, Force: true, ProjectName: "forced"}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(data) != "mine" {
		t.Errorf("notes.txt = %q, %v; want it kept", data, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "Makefile")); string(data) == "old" {
		t.Error("Makefile not replaced")
	}
	checkProject(t, dir)
}

func TestKindFromChartName(t *testing.T) {
	for in, want := range map[string]string{"webapp": "Webapp", "my-web_app": "MyWebApp", "nginx-ingress2": "NginxIngress2"} {
		if got := KindFromChartName(in); got != want {
			t.Errorf("KindFromChartName(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInitFromRepository inits from a chart pulled from a served chart
// repository: the same project as from the local directory.
func TestInitFromRepository(t *testing.T) {
	t.Setenv("HELM_CACHE_HOME", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	served := t.TempDir()
	c, err := chart.Load(chartDir("umbrella"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(c.Helm, served); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()
	idx, err := repo.IndexDirectory(served, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(served, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "p")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("umbrella")}, Dir: local}); err != nil {
		t.Fatal(err)
	}
	pulled := filepath.Join(t.TempDir(), "p")
	if err := Init(Options{APIOptions: APIOptions{Chart: "umbrella", ChartRepo: srv.URL, ChartVersion: "1.2.0"}, Dir: pulled}); err != nil {
		t.Fatal(err)
	}
	want, got := projectFiles(t, local), projectFiles(t, pulled)
	if len(got) != len(want) {
		t.Fatalf("%d files from the repository, %d from the directory", len(got), len(want))
	}
	for rel, data := range want {
		if !bytes.Equal(got[rel], data) {
			t.Errorf("%s differs between the pulled and the local chart", rel)
		}
	}
	err = Init(Options{APIOptions: APIOptions{Chart: "umbrella", ChartRepo: srv.URL, ChartVersion: "2.0.0"}, Dir: filepath.Join(t.TempDir(), "q")})
	if err == nil || !strings.Contains(err.Error(), `version "2.0.0" not found`) {
		t.Errorf("Init() of a missing version = %v", err)
	}
}

// TestInitFromOCI inits from a chart pushed to a real OCI registry
// (go-containerregistry's, on 127.0.0.1) by oci:// reference: the same
// project as from the local directory.
func TestInitFromOCI(t *testing.T) {
	t.Setenv("HELM_CACHE_HOME", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c, err := chart.Load(chartDir("umbrella"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := chartutil.Save(c.Helm, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Push(data, host+"/charts/umbrella:1.2.0"); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "p")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("umbrella")}, Dir: local}); err != nil {
		t.Fatal(err)
	}
	pulled := filepath.Join(t.TempDir(), "p")
	ref := "oci://" + host + "/charts/umbrella"
	if err := Init(Options{APIOptions: APIOptions{Chart: ref, ChartVersion: "1.2.0", PlainHTTP: true}, Dir: pulled}); err != nil {
		t.Fatal(err)
	}
	want, got := projectFiles(t, local), projectFiles(t, pulled)
	if len(got) != len(want) {
		t.Fatalf("%d files from the registry, %d from the directory", len(got), len(want))
	}
	for rel, data := range want {
		if !bytes.Equal(got[rel], data) {
			t.Errorf("%s differs between the pulled and the local chart", rel)
		}
	}
	missing := filepath.Join(t.TempDir(), "q")
	err = Init(Options{APIOptions: APIOptions{Chart: ref, ChartVersion: "2.0.0", PlainHTTP: true}, Dir: missing})
	if err == nil || !strings.Contains(err.Error(), "pulling chart "+ref+" 2.0.0") {
		t.Errorf("Init() of a missing version = %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a failed init left %s behind: %v", missing, err)
	}
}

// TestInitKeepsValuesTheTemplatesRead: init of a chart whose helpers read
// values values.yaml leaves out writes a CRD that declares them (any value)
// and warns: on screen one line for the kind (the chart has more than
// three), in WarningsFile each, naming the file and the path, with its fix.
func TestInitKeepsValuesTheTemplatesRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "helpers-operator")
	var out bytes.Buffer
	chart := filepath.Join("..", "crdschema", "testdata", "charts", "helpers")
	if err := Init(Options{APIOptions: APIOptions{Chart: chart}, Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	summary := crdschema.Undeclared.Summary()
	if n := strings.Count(out.String(), summary); n != 1 || strings.Contains(out.String(), "reads .Values.nameOverride") {
		t.Errorf("init's output has %d lines for the undeclared values (want 1, and none of them one by one):\n%s", n, out.String())
	}
	listed, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(WarningsFile)))
	if err != nil {
		t.Fatal(err)
	}
	// --warnings-file elsewhere: the list goes there, none into the project.
	elsewhere := filepath.Join(t.TempDir(), "w", "warnings.txt")
	other := filepath.Join(t.TempDir(), "other")
	if err := Init(Options{APIOptions: APIOptions{Chart: chart}, Dir: other, WarningsFile: elsewhere}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(elsewhere); err != nil || !bytes.Equal(got, listed) {
		t.Errorf("--warnings-file %s holds %q (%v), want the list the project's default holds", elsewhere, got, err)
	}
	if _, err := os.Stat(filepath.Join(other, filepath.FromSlash(WarningsFile))); !os.IsNotExist(err) {
		t.Errorf("with --warnings-file, %s was written in the project too (%v)", WarningsFile, err)
	}
	for _, want := range []string{
		"chart helpers: templates/_helpers.tpl reads .Values.nameOverride, which values.yaml does not declare",
		"chart helpers: templates/deployment.yaml reads .Values.probe, which values.yaml does not declare",
		"  fix: " + crdschema.Undeclared.Fix(),
	} {
		if !strings.Contains(string(listed), want) {
			t.Errorf("%s lacks %q:\n%s", WarningsFile, want, listed)
		}
	}
	matches, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*_helperses.yaml"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("CRDs written: %v, %v", matches, err)
	}
	crd, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"              nameOverride:\n                nullable: true\n                x-kubernetes-preserve-unknown-fields: true\n",
		"              replicaCount:\n                description: Number of pods.\n                nullable: true\n                type: integer\n"} {
		if !strings.Contains(string(crd), want) {
			t.Errorf("the CRD lacks\n%s", want)
		}
	}
}

// A library chart is refused by init and create api, naming its
// Chart.yaml and type, and nothing is written.
func TestLibraryChartRefused(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib")
	writeFile(t, filepath.Join(lib, "Chart.yaml"), "apiVersion: v2\nname: lib\ntype: library\nversion: 0.1.0\n")
	want := filepath.Join(lib, "Chart.yaml") + `: type is "library"`

	dir := filepath.Join(t.TempDir(), "op")
	err := Init(Options{APIOptions: APIOptions{Chart: lib}, Dir: dir})
	if !errors.Is(err, chart.ErrLibraryChart) || !strings.Contains(err.Error(), want) {
		t.Errorf("Init() = %v, want ErrLibraryChart containing %q", err, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused init left %s: %v", dir, err)
	}

	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	before := projectFiles(t, dir)
	err = CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Chart: lib}, Dir: dir})
	if !errors.Is(err, chart.ErrLibraryChart) || !strings.Contains(err.Error(), want) {
		t.Errorf("CreateAPI() = %v, want ErrLibraryChart containing %q", err, want)
	}
	if after := projectFiles(t, dir); len(after) != len(before) {
		t.Errorf("a refused create api changed the project: %d files, then %d", len(before), len(after))
	}
}

// The project root gets the mode mkdir gives a directory (0o777 less the
// umask), as the directories under it do, not MkdirTemp's 0o700.
func TestInitRootMode(t *testing.T) {
	parent := t.TempDir()
	ref := filepath.Join(parent, "ref")
	if err := os.Mkdir(ref, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "op")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("project root mode %v, want %v (what mkdir makes)", got.Mode().Perm(), want.Mode().Perm())
	}
}
