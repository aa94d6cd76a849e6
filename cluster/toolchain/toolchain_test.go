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

// The embedded tools module must be the one in tools/: `make generate` copies it.
func TestEmbeddedModuleMatchesTools(t *testing.T) {
	for name, embedded := range map[string][]byte{"go.mod": goMod, "go.sum": goSum, "tools.go": toolsGo} {
		onDisk, err := os.ReadFile(filepath.Join("..", "..", "tools", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, embedded) {
			t.Errorf("tools/%s differs from its embedded copy: run `make generate`", name)
		}
	}
}

// Every binary's package is imported by tools.go, so go mod tidy keeps its
// module and go.sum has what building it needs.
func TestEveryBinaryIsPinned(t *testing.T) {
	m, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range Binaries() {
		if !strings.Contains(string(toolsGo), `"`+b.Package+`"`) {
			t.Errorf("%s: package %s is not imported by tools/tools.go", b.Name, b.Package)
		}
		if v := m.version(b.Module); v == "" {
			t.Errorf("%s: module %s is not required by tools/go.mod", b.Name, b.Module)
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
		only []string
		want []string
		// wantErr is a substring of the error; empty: no error.
		wantErr string
	}{
		{only: nil, want: []string{"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok", "olm", "catalog"}},
		{only: EnvtestBinaries, want: []string{"etcd", "kube-apiserver", "kubectl"}},
		{only: []string{"olm", "etcd"}, want: []string{"etcd", "olm"}},
		{only: []string{"kube-apiservr"}, wantErr: `unknown component "kube-apiservr": the components are etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kwok, olm, catalog`},
		{only: []string{"olm", "nope", "etcd2"}, wantErr: `unknown component "nope", "etcd2": the components are `},
	}
	for _, tt := range tests {
		bins, err := selected(tt.only)
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
	load := func() module {
		m, err := loadModule()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := load().key("go1.26.8")
	if !regexp.MustCompile(`^go1\.26\.8-[0-9a-f]{8,}$`).MatchString(base) {
		t.Errorf("key %q: want the Go version, a dash and a hex digest", base)
	}
	// The embedded go.mod and go.sum are hashed whole; the Kubernetes
	// version also goes into the binaries' build flags.
	bumped := load()
	for _, r := range bumped.file.Require {
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
	m, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, m.key(goRuntimeVersion()))
	for _, b := range Binaries() {
		writeFile(t, filepath.Join(root, "bin", b.Name), "binary")
	}
	writeFile(t, filepath.Join(root, "olm-crds", "a.yaml"), "kind: CustomResourceDefinition")
	writeFile(t, filepath.Join(root, "kwok-stages.yaml"), "kind: Stage")

	inst, err := Ensure(context.Background(), Options{CacheDir: dir, Go: "/nonexistent/go"})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Binary("kube-apiserver") != filepath.Join(root, "bin", "kube-apiserver") {
		t.Errorf("Binary = %s", inst.Binary("kube-apiserver"))
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

func TestTail(t *testing.T) {
	tl := newTail(2)
	for _, l := range []string{"a", "b", "c"} {
		tl.add(l)
	}
	if got := tl.String(); got != "b\nc" {
		t.Errorf("tail = %q", got)
	}
}
