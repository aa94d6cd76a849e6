package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/chartpilot/chartpilot"

// stages are the layers from the bottom up, each a list of top-level
// folders (a package's stage is its first path element's; cmd/ is one
// stage). A package may import packages of its own stage and of stages
// below it, never above.
var stages = []struct {
	name    string
	folders []string
}{
	{"internal: helpers and contracts", []string{"internal"}},
	{"runtime", []string{"operator"}},
	{"chart", []string{"chart", "crdschema", "crddiff", topLevel}},
	{"scaffold", []string{"rbac", "scaffold"}},
	{"bundle", []string{"bundle", "scorecard"}},
	{"catalog", []string{"catalog"}},
	{"olm/cluster", []string{"olm", "cluster", "apply"}},
	{"doctor", []string{"doctor"}},
	{"cmd", []string{"cmd"}},
}

// closed are folders whose packages, with everything they import, stay
// within the given folders: what the operator image carries.
var closed = []struct {
	folder string
	within []string
	why    string
}{
	{"operator", []string{"operator", "internal"}, "the runtime imports no build-time package"},
	{"cmd/runcmd", []string{"cmd/runcmd", "operator", "internal"}, "the operator image's commands import no build-time package"},
	{"internal", []string{"internal"}, "internal/ imports nothing of chartpilot above it"},
}

// fixtureSuffix ends the name of a package of test fixtures (charttest,
// clustertest): only tests import it, so it stands outside the stages.
const fixtureSuffix = "test"

type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	Imports    []string
	Deps       []string
}

// listPackages is `go list -json ./...` of the module, run once.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	pkgs, err := listOnce()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages: not the module", len(pkgs))
	}
	return pkgs
}

var listOnce = sync.OnceValues(func() ([]pkg, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Dir,Imports,Deps", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		if err := touchSources(p.Dir); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
})

// touchSources stats the Go files of dir: go test caches a result with
// the files the test itself opened, and go list's reads are not among them.
func touchSources(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			if _, err := os.Stat(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// topLevel is the module's own package, the example operator's chart, as
// rel names it.
const topLevel = "."

// rel is an import path inside the module, and whether it is the
// module's.
func rel(path string) (string, bool) {
	if path == module {
		return topLevel, true
	}
	return strings.CutPrefix(path, module+"/")
}

// under says whether the module path p is folder or inside it.
func under(p, folder string) bool {
	return p == folder || strings.HasPrefix(p, folder+"/")
}

func isFixture(p string) bool {
	return strings.HasSuffix(p[strings.LastIndex(p, "/")+1:], fixtureSuffix)
}

// stageOf is the index of p's stage, -1 when no stage holds it.
func stageOf(p string) int {
	top, _, _ := strings.Cut(p, "/")
	for i, s := range stages {
		if slices.Contains(s.folders, top) {
			return i
		}
	}
	return -1
}

// No import climbs a stage; every package has a stage.
func TestStageOrder(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		if isFixture(from) {
			continue
		}
		si := stageOf(from)
		if si < 0 {
			t.Errorf("%s is in no stage: add its folder to a stage in internal/layers", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if isFixture(to) {
				t.Errorf("%s imports %s, a fixture for tests only", from, to)
				continue
			}
			if sj := stageOf(to); sj > si {
				t.Errorf("%s (stage %s) imports %s, of the later stage %s", from, stages[si].name, to, stages[sj].name)
			}
		}
	}
}

// Only commands import cmd/; the runtime, cmd/runcmd and internal/ stay
// within what they may carry, with all that they import.
func TestClosedFolders(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok && under(to, "cmd") && !under(from, "cmd") {
				t.Errorf("%s imports %s: only commands import cmd/", from, to)
			}
		}
		for _, c := range closed {
			if !under(from, c.folder) {
				continue
			}
			for _, dep := range p.Deps {
				to, ok := rel(dep)
				if !ok || slices.ContainsFunc(c.within, func(f string) bool { return under(to, f) }) {
					continue
				}
				t.Errorf("%s depends on %s (through %s): %s", from, to, importerOf(p, dep), c.why)
			}
		}
	}
}

// operatorBinary is the operator image's program, and buildTime what it
// must not carry: chartpilot's build-time packages and the modules only
// they need.
const operatorBinary = module + "/cmd/chartpilot-operator"

var buildTime = []string{
	module + "/scaffold", module + "/bundle", module + "/catalog", module + "/cluster",
	module + "/rbac", module + "/chart", module + "/scorecard", module + "/olm",
	module + "/doctor", module + "/crdschema", module + "/apply",
	module + "/cmd/cli", module + "/cmd/demo", module + "/internal/ociimage",
	"github.com/operator-framework", "github.com/google/go-containerregistry",
}

// The operator binary imports none of the build-time packages: what it
// imports is what the operator image carries and maps into memory.
func TestOperatorBinaryCarriesNoBuildTimePackage(t *testing.T) {
	pkgs := listPackages(t)
	i := slices.IndexFunc(pkgs, func(p pkg) bool { return p.ImportPath == operatorBinary })
	if i < 0 || !slices.Contains(pkgs[i].Deps, module+"/operator") {
		t.Fatalf("go list found no %s importing %s/operator", operatorBinary, module)
	}
	for _, dep := range pkgs[i].Deps {
		for _, bad := range buildTime {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("%s is in the operator binary's graph, through %s", dep, importerOf(pkgs[i], dep))
			}
		}
	}
}

// importerOf names the direct import of p through which it depends on dep.
func importerOf(p pkg, dep string) string {
	if slices.Contains(p.Imports, dep) {
		return "a direct import"
	}
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, p.ImportPath)
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(f[1:], dep) {
			return f[0]
		}
	}
	return "?"
}

// Every package says in its doc.go what it is for and what it must not
// import.
func TestDocGo(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		data, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go", from)
			continue
		}
		doc := string(data)
		kind := "// Package " + p.Name + " "
		if p.Name == "main" {
			kind = "// Command "
		}
		if !strings.HasPrefix(doc, kind) && !strings.Contains(doc, "\n"+kind) {
			t.Errorf("%s/doc.go does not open with %q", from, strings.TrimSpace(kind))
		}
		if !strings.Contains(doc, "import") {
			t.Errorf("%s/doc.go does not say what the package must not import", from)
		}
	}
}

// realNodePackage names the packages whose tests take the machine's one
// real node: `make test` runs them (the packages named so) in a stream of
// their own beside the rest, so no other package's test holds a slot of go
// test waiting for the node.
const realNodePackage = "realnode"

// Every test that takes the real node lives in a package named
// realNodePackage.
func TestRealNodeTestsInRealNodePackages(t *testing.T) {
	found := 0
	for _, p := range listPackages(t) {
		files, err := filepath.Glob(filepath.Join(p.Dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			takes := bytes.Contains(src, []byte("clustertest.RequireRealNode(")) || bytes.Contains(src, []byte("clustertest.LockRealNode(")) ||
				bytes.Contains(src, []byte("clustertest.SharedRealNode{"))
			if !takes || !bytes.Contains(src, []byte(`"`+module+`/cluster/clustertest"`)) {
				continue
			}
			found++
			if p.Name != realNodePackage && p.Name != realNodePackage+"_test" {
				r, _ := rel(p.ImportPath)
				t.Errorf("%s/%s takes the real node: move the test into a package named %s (e.g. %s/%s)", r, filepath.Base(f), realNodePackage, r, realNodePackage)
			}
		}
	}
	if found < 5 {
		t.Errorf("found %d test files taking the real node: the check reads the wrong sources", found)
	}
}
