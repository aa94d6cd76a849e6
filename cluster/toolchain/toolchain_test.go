package toolchain

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The embedded tools modules must be the ones in tools/ (their Go sources
// but tests): `make generate` copies them.
func TestEmbeddedModulesMatchTools(t *testing.T) {
	for _, f := range embeddedFiles() {
		rel := strings.TrimSuffix(strings.TrimPrefix(f, "modules/"), embedSuffix)
		name, file, _ := strings.Cut(rel, "/")
		dir := moduleDirs[name]
		onDisk, err := os.ReadFile(filepath.Join("..", "..", dir, file))
		if err != nil {
			t.Errorf("%s: %v (run `make generate`)", f, err)
			continue
		}
		embedded, _ := embedded.ReadFile(f)
		if !bytes.Equal(onDisk, embedded) {
			t.Errorf("%s/%s differs from its embedded copy: run `make generate`", dir, file)
		}
	}
	// And every Go file of theirs but tests is embedded.
	for _, name := range []string{nodeModule, storageModule, csiModule, olmv1Module} {
		root := filepath.Join("..", "..", filepath.FromSlash(moduleDirs[name]))
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if _, err := embedded.ReadFile("modules/" + name + "/" + filepath.ToSlash(rel) + embedSuffix); err != nil {
				t.Errorf("%s/%s is not embedded: run `make generate`", moduleDirs[name], rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// moduleDirs are the tools modules' directories in the repository.
var moduleDirs = map[string]string{clusterModule: "tools", nodeModule: "tools/node", storageModule: "tools/storage", csiModule: "tools/csi", olmv1Module: "tools/olmv1"}

// Every binary's package is imported by its module's tools.go or is a main
// package of that module, so go mod tidy keeps what building it needs.
func TestEveryBinaryIsPinned(t *testing.T) {
	ms, err := loadModules()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range allBinaries() {
		toolsGo, err := embedded.ReadFile("modules/" + b.source() + "/tools.go" + embedSuffix)
		if err != nil {
			t.Fatal(err)
		}
		own := strings.HasPrefix(b.Package, nodeToolsModule+"/") || strings.HasPrefix(b.Package, storageToolsModule+"/") || strings.HasPrefix(b.Package, csiToolsModule+"/")
		if !own && !strings.Contains(string(toolsGo), `"`+b.Package+`"`) {
			t.Errorf("%s: package %s is not imported by the %s module's tools.go", b.Name, b.Package, b.source())
		}
		if v := ms.version(b); v == "" {
			t.Errorf("%s: module %s is not required by the %s tools module", b.Name, b.Module, b.source())
		}
	}
}

func TestVersionLDFlags(t *testing.T) {
	tests := []struct {
		module, version string
		want            []string
	}{
		{kubernetesModule, "v1.36.3", []string{"k8s.io/component-base/version.gitVersion=v1.36.3", "k8s.io/component-base/version.gitMajor=1",
			"k8s.io/component-base/version.gitMinor=36", "k8s.io/client-go/pkg/version.gitVersion=v1.36.3"}},
		{olmModule, "v0.46.0", nil},
	}
	for _, tt := range tests {
		got := versionLDFlags(tt.module, tt.version)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("versionLDFlags(%s, %s) lacks %s: %v", tt.module, tt.version, w, got)
			}
		}
		if tt.want == nil && got != nil {
			t.Errorf("versionLDFlags(%s) = %v, want none", tt.module, got)
		}
	}
}

func TestSelected(t *testing.T) {
	tests := []struct {
		only  []string
		node  bool
		olmv1 bool
		want  []string
		// wantErr is a substring of the error; empty: no error.
		wantErr string
	}{
		{only: nil, want: []string{"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok", "olm", "catalog", "object-store"}},
		{only: EnvtestBinaries, want: []string{"etcd", "kube-apiserver", "kubectl"}},
		{node: true, want: append(names(Binaries()), NodeBinaryNames()...)},
		{only: []string{"runc", "etcd"}, want: []string{"etcd", "runc"}},
		{only: []string{"olm", "etcd"}, want: []string{"etcd", "olm"}},
		{olmv1: true, want: append(names(Binaries()), "catalogd", "operator-controller")},
		{node: true, olmv1: true, want: append(append(names(Binaries()), NodeBinaryNames()...), "catalogd", "operator-controller")},
		{only: []string{"operator-controller"}, want: []string{"operator-controller"}},
		{only: []string{"kube-apiservr"}, wantErr: `unknown component "kube-apiservr": the components are etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kwok, olm, catalog, object-store, kubelet`},
		{only: []string{"olm", "nope", "etcd2"}, wantErr: `unknown component "nope", "etcd2": the components are `},
	}
	for _, tt := range tests {
		bins, err := selected(tt.only, tt.node, tt.olmv1)
		if tt.wantErr != "" {
			if !errors.Is(err, ErrUnknownComponent) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("selected(%v) error = %v, want ErrUnknownComponent containing %q", tt.only, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("selected(%v): %v", tt.only, err)
			continue
		}
		var got []string
		for _, b := range bins {
			got = append(got, b.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("selected(%v) = %v, want %v", tt.only, got, tt.want)
		}
	}
}

// Ensure refuses an unknown component before building or looking at anything.
func TestEnsureRefusesUnknownComponents(t *testing.T) {
	_, err := Ensure(t.Context(), Options{CacheDir: t.TempDir(), Go: "no-such-go", Only: []string{"kube-apiservr"}})
	if !errors.Is(err, ErrUnknownComponent) {
		t.Fatalf("Ensure() = %v, want ErrUnknownComponent", err)
	}
}

// The cache key is the same for the same module and Go, and changes with the
// Go version and with the Kubernetes version.
func TestCacheKey(t *testing.T) {
	load := func() modules {
		ms, err := loadModules()
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	base := load().key("go1.26.8")
	if !regexp.MustCompile(`^go1\.26\.8-[0-9a-f]{8,}$`).MatchString(base) {
		t.Errorf("key %q: want the Go version, a dash and a hex digest", base)
	}
	// The embedded files are hashed whole; the Kubernetes version also goes
	// into the binaries' build flags.
	bumped := load()
	for _, r := range bumped[clusterModule].file.Require {
		if r.Mod.Path == kubernetesModule {
			r.Mod.Version += "-bumped"
		}
	}
	tests := []struct {
		name string
		key  string
		same bool
	}{
		{"loaded again", load().key("go1.26.8"), true},
		{"another Go", load().key("go1.27.0"), false},
		{"another Kubernetes version", bumped.key("go1.26.8"), false},
	}
	for _, tt := range tests {
		if got := tt.key == base; got != tt.same {
			t.Errorf("%s: key %q vs %q, same = %v, want %v", tt.name, tt.key, base, got, tt.same)
		}
	}
}

func TestEnsureWithoutGo(t *testing.T) {
	_, err := Ensure(context.Background(), Options{CacheDir: t.TempDir(), Go: "/nonexistent/go"})
	if !errors.Is(err, ErrNoGo) {
		t.Fatalf("Ensure = %v, want ErrNoGo", err)
	}
}

// A populated cache is used as it is: nothing is built, not even the go
// command is needed.
func TestEnsureUsesCache(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadModules()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, ms.key(goRuntimeVersion()))
	for _, b := range Binaries() {
		writeFile(t, filepath.Join(dir, "bins", b.Name, ms.binKey(goRuntimeVersion(), b)), "binary")
	}
	writeFile(t, filepath.Join(root, "olm-crds", "a.yaml"), "kind: CustomResourceDefinition")
	writeFile(t, filepath.Join(root, "kwok-stages.yaml"), "kind: Stage")
	writeFile(t, filepath.Join(root, "olm-chart", "Chart.yaml"), "name: olm")

	inst, err := Ensure(context.Background(), Options{CacheDir: dir, Go: "/nonexistent/go"})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Binary("kube-apiserver") != filepath.Join(root, "bin", "kube-apiserver") {
		t.Errorf("Binary = %s", inst.Binary("kube-apiserver"))
	}
	if data, err := os.ReadFile(inst.Binary("kube-apiserver")); err != nil || string(data) != "binary" {
		t.Errorf("the linked binary reads %q, %v", data, err)
	}
	if inst.Versions["kube-apiserver"] == "" || inst.Versions["olm"] == "" {
		t.Errorf("Versions = %v", inst.Versions)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func names(bins []Binary) []string {
	var out []string
	for _, b := range bins {
		out = append(out, b.Name)
	}
	return out
}

func TestTail(t *testing.T) {
	tl := newTail(2)
	for _, l := range []string{"a", "b", "c"} {
		tl.add(l)
	}
	if got := tl.String(); got != "b\nc" {
		t.Errorf("tail = %q", got)
	}
}

// A binary's cache key follows its own sources: a change to one of our
// programs rebuilds that program only, a change to go.mod every binary of
// the module, and nothing of the other modules.
func TestBinKeyFollowsOwnSources(t *testing.T) {
	ms, err := loadModules()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Binary{}
	for _, b := range allBinaries() {
		byName[b.Name] = b
	}
	base := map[string]string{
		"modules/node/go.mod.embed":                           "module",
		"modules/node/tools.go.embed":                         "tools",
		"modules/node/hello-server/main.go.embed":             "hello",
		"modules/node/cp/main.go.embed":                       "cp",
		"modules/cluster/go.mod.embed":                        "cluster",
		"modules/storage/object-store/main.go.embed":          "store",
		"modules/olmv1/boxcutter/managedcache/cache.go.embed": "cache",
		"modules/olmv1/overlay/sa/serviceaccount.go.embed":    "sa",
	}
	keys := func(change map[string]string) map[string]string {
		files := map[string]string{}
		for f, c := range base {
			files[f] = c
		}
		for f, c := range change {
			files[f] = c
		}
		var names []string
		for f := range files {
			names = append(names, f)
		}
		slices.Sort(names)
		out := map[string]string{}
		for _, name := range []string{"hello-server", "cp", "containerd", "kube-apiserver", "object-store", "catalogd"} {
			out[name] = ms.binKeyOf("go1", byName[name], names, func(f string) []byte { return []byte(files[f]) })
		}
		return out
	}
	before := keys(nil)
	tests := []struct {
		name    string
		change  map[string]string
		rebuilt []string
	}{
		{"one program of ours", map[string]string{"modules/node/hello-server/main.go.embed": "hello, data"}, []string{"hello-server"}},
		{"a new program of ours", map[string]string{"modules/node/new/main.go.embed": "new"}, nil},
		{"the module's requirements", map[string]string{"modules/node/go.mod.embed": "module v2"}, []string{"hello-server", "cp", "containerd"}},
		{"the other module's program", map[string]string{"modules/storage/object-store/main.go.embed": "store v2"}, []string{"object-store"}},
		// OLM v1 builds from the module its go.mod replaces with a directory
		// of its own, and from its overlay.
		{"a module replaced by a directory", map[string]string{"modules/olmv1/boxcutter/managedcache/cache.go.embed": "cache v2"}, []string{"catalogd"}},
		{"an overlay file", map[string]string{"modules/olmv1/overlay/sa/serviceaccount.go.embed": "sa v2"}, []string{"catalogd"}},
		{"a test beside an overlay file", map[string]string{"modules/olmv1/overlay/sa/serviceaccount_test.go.embed": "test"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := keys(tt.change)
			var rebuilt []string
			for _, name := range []string{"hello-server", "cp", "containerd", "kube-apiserver", "object-store", "catalogd"} {
				if after[name] != before[name] {
					rebuilt = append(rebuilt, name)
				}
			}
			if !slices.Equal(rebuilt, tt.rebuilt) {
				t.Errorf("rebuilt %v, want %v", rebuilt, tt.rebuilt)
			}
		})
	}
}

// The CSI module builds on the cluster module's line: every module both
// require is at the same version, so that each package they share compiles
// once (the go command's cache keys a package by its dependencies' builds
// too: one differing module below client-go recompiles all of it). The CSI
// spec is the exception: the sidecars need a newer one than the kubelet's,
// and only CSI packages import it.
// TestToolsModulesOnTheClusterLine keeps the modules built beside the
// cluster module on its Kubernetes line and versions: the packages they
// share compile once.
func TestToolsModulesOnTheClusterLine(t *testing.T) {
	ms, err := loadModules()
	if err != nil {
		t.Fatal(err)
	}
	cluster := selectedVersions(ms[clusterModule])
	for _, tc := range []struct {
		module     string
		exceptions []string
	}{
		{module: csiModule, exceptions: []string{"github.com/container-storage-interface/spec"}},
		{module: olmv1Module},
	} {
		t.Run(tc.module, func(t *testing.T) {
			shared := 0
			for path, v := range selectedVersions(ms[tc.module]) {
				cv, ok := cluster[path]
				if !ok || slices.Contains(tc.exceptions, path) {
					continue
				}
				shared++
				if v != cv {
					t.Errorf("%s: %s in the %s module, %s in the cluster module (tools/go.mod): require or replace it at the cluster's", path, v, tc.module, cv)
				}
			}
			if shared < 100 {
				t.Errorf("the %s and cluster modules share %d modules: want them on one Kubernetes line", tc.module, shared)
			}
		})
	}
}

// selectedVersions are the versions a tools module's go.mod selects: the
// required ones, or their replacements.
func selectedVersions(m module) map[string]string {
	out := map[string]string{}
	for _, r := range m.file.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range m.file.Replace {
		if r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}
