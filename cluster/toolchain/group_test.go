package toolchain

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGroupBinaries(t *testing.T) {
	// bin is a binary of the cluster module unless tools says otherwise.
	bin := func(name, pkg string) Binary { return Binary{Name: name, Package: pkg} }
	withTags := func(b Binary, tags ...string) Binary { b.Tags = tags; return b }
	in := func(b Binary, tools string) Binary { b.Tools = tools; return b }
	cgo := func(b Binary) Binary { b.CGO = true; return b }
	tests := []struct {
		name string
		bins []Binary
		// want lists each group as its String and its binaries' names.
		want []string
	}{
		{
			name: "one module, one go build",
			bins: []Binary{bin("etcd", "go.etcd.io/etcd/server/v3"), bin("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver")},
			want: []string{"the cluster module: etcd kube-apiserver"},
		},
		{
			name: "modules apart, in the order of their first binary",
			bins: []Binary{
				bin("etcd", "go.etcd.io/etcd/server/v3"),
				in(bin("pause", "example.com/node/pause"), nodeModule),
				bin("kwok", "sigs.k8s.io/kwok/cmd/kwok"),
			},
			want: []string{"the cluster module: etcd kwok", "the node module: pause"},
		},
		{
			name: "cgo apart",
			bins: []Binary{in(bin("containerd", "example.com/containerd"), nodeModule), in(cgo(withTags(bin("runc", "example.com/runc"), "seccomp")), nodeModule)},
			want: []string{"the node module: containerd", "the node module (cgo, tags seccomp): runc"},
		},
		{
			name: "neutral tags join the module's group, which builds with them",
			bins: []Binary{bin("olm", "example.com/olm"), withTags(bin("opm", "example.com/opm"), "json1", "containers_image_openpgp")},
			want: []string{"the cluster module: olm opm"},
		},
		{
			name: "other tags apart",
			bins: []Binary{bin("a", "example.com/a"), withTags(bin("b", "example.com/b"), "json1", "other")},
			want: []string{"the cluster module: a", "the cluster module (tags other): b"},
		},
		{
			name: "the same file name in two go builds",
			bins: []Binary{bin("one", "example.com/one/cmd/tool"), bin("two", "example.com/two/cmd/tool"), bin("three", "example.com/three")},
			want: []string{"the cluster module: one three", "the cluster module: two"},
		},
		{name: "nothing", bins: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, g := range groupBinaries(tt.bins) {
				got = append(got, g.String()+": "+strings.Join(g.names(), " "))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Every component builds in a go build with the others of its module: one
// for the cluster, the node (and runc with cgo), the storage, CSI and OLM
// v1. The envtest binaries are in the first.
func TestGroupsOfAllBinaries(t *testing.T) {
	groups := groupBinaries(allBinaries())
	var got []string
	for _, g := range groups {
		got = append(got, g.String())
	}
	want := []string{"the cluster module", "the storage module", "the node module", "the node module (cgo, tags seccomp)", "the csi module", "the olmv1 module"}
	if !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
	for _, name := range EnvtestBinaries {
		if !slices.Contains(groups[0].names(), name) {
			t.Errorf("%s is not in the first group %v", name, groups[0].names())
		}
	}
}

func TestExecName(t *testing.T) {
	tests := []struct{ pkg, want string }{
		{"k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"},
		{"go.etcd.io/etcd/server/v3", "server"},
		{"github.com/containerd/containerd/v2/cmd/containerd", "containerd"},
		{"github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner", "csi-provisioner"},
		{"github.com/opencontainers/runc", "runc"},
		{"example.com/tool/v1", "v1"},
		{"example.com/tool/v10", "tool"},
		{"example.com/tool/v05", "v05"},
		{"v2", "v2"},
	}
	for _, tt := range tests {
		if got := execName(tt.pkg); got != tt.want {
			t.Errorf("execName(%s) = %s, want %s", tt.pkg, got, tt.want)
		}
	}
}

// Only the Kubernetes binaries get the version stamp: kwok and olm link the
// same version packages and keep their own.
func TestLdflagArgs(t *testing.T) {
	apiserver := Binary{Name: "kube-apiserver", Package: kubernetesModule + "/cmd/kube-apiserver", Module: kubernetesModule}
	kwok := Binary{Name: "kwok", Package: kwokModule + "/cmd/kwok", Module: kwokModule}
	g := &group{tools: clusterModule, bins: []Binary{kwok, apiserver}}
	got := g.ldflagArgs(func(Binary) string { return "v1.36.3" })
	if len(got) != 2 || got[0] != "-ldflags=-s -w" {
		t.Fatalf("ldflagArgs = %q, want the shared flags and kube-apiserver's", got)
	}
	want := "-ldflags=" + apiserver.Package + "=-s -w " + strings.Join(versionLDFlags(kubernetesModule, "v1.36.3"), " ")
	if got[1] != want {
		t.Errorf("kube-apiserver's flags = %q, want %q", got[1], want)
	}
}

// A go build with several packages writes each binary under execName, and a
// pattern=flags -ldflags reaches the named binary alone.
func TestGoBuildWritesEveryBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goPath, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	src := t.TempDir()
	write := func(rel, content string) { writeFile(t, filepath.Join(src, "m", rel), content) }
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("v/v.go", "package v\n\nvar Version = \"none\"\n")
	for _, name := range []string{"a", "b/v2"} {
		write(name+"/main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m/v\"\n)\n\nfunc main() { fmt.Print(v.Version) }\n")
	}
	g := &group{tools: "m", bins: []Binary{{Name: "a", Package: "example.com/m/a", Module: "example.com/m"}, {Name: "b", Package: "example.com/m/b/v2", Module: kubernetesModule}}}
	out := t.TempDir()
	// A stand-in for the Kubernetes version flags, on a package of this module.
	args := []string{"build", "-ldflags=-s -w", "-ldflags=example.com/m/b/v2=-s -w -X example.com/m/v.Version=stamped", "-o", out + "/"}
	b := builder{goPath: goPath, src: src, out: os.Stderr, log: io.Discard, heartbeat: 1 << 40}
	if _, err := b.runGo(t.Context(), "test", g, append(args, g.packages()...), Progress{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ bin, want string }{{"a", "none"}, {"b", "stamped"}} {
		got, err := exec.Command(filepath.Join(out, execName(g.bins[slices.IndexFunc(g.bins, func(b Binary) bool { return b.Name == tt.bin })].Package))).Output()
		if err != nil || string(got) != tt.want {
			t.Errorf("%s prints %q, %v; want %q", tt.bin, got, err, tt.want)
		}
	}
}

// The neutral tags change no package that a binary without them links, on
// the pinned versions: each group's other binaries have the same packages
// and files with the group's tags as without.
func TestNeutralTagsChangeNoOtherBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the tools modules' packages (downloads them when missing)")
	}
	goPath, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	src := t.TempDir()
	for _, g := range groupBinaries(allBinaries()) {
		tags := g.buildTags()
		var others []string
		for _, b := range g.bins {
			if !slices.Equal(sortedCopy(b.Tags), tags) {
				others = append(others, b.Package)
			}
		}
		if len(others) == 0 {
			continue
		}
		if err := materialize(g.tools, filepath.Join(src, g.tools)); err != nil {
			t.Fatal(err)
		}
		b := builder{goPath: goPath, src: src}
		list := func(extra ...string) string {
			args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.GoFiles}} {{.CgoFiles}} {{.SFiles}} {{.EmbedFiles}}"}, extra...)
			cmd := exec.Command(goPath, append(args, others...)...)
			cmd.Dir = filepath.Join(src, g.tools)
			cmd.Env = append(b.env(), fmt.Sprintf("CGO_ENABLED=%d", map[bool]int{false: 0, true: 1}[g.cgo]))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list in %s: %v\n%s", g, err, out)
			}
			return string(out)
		}
		if list() != list("-tags="+strings.Join(tags, ",")) {
			t.Errorf("%s: tags %v change packages of %v: they are not neutral", g, tags, others)
		}
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// buildAll installs every binary of a group in its cache entry and links it
// into the bin directory; a group that fails names the binaries it did not
// build and shows the compiler's error.
func TestBuildAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goPath, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	src := t.TempDir()
	write := func(rel, content string) { writeFile(t, filepath.Join(src, "m", rel), content) }
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("good/main.go", "package main\n\nfunc main() {}\n")
	write("other/main.go", "package main\n\nfunc main() {}\n")
	write("broken/main.go", "package main\n\nfunc main() { undefinedCall() }\n")
	bin := func(name string) Binary {
		return Binary{Name: name, Package: "example.com/m/" + name, Module: "example.com/m", Tools: "m"}
	}
	cache := t.TempDir()
	plan := buildPlan{
		version: func(Binary) string { return "local" },
		dest:    func(b Binary) string { return filepath.Join(cache, "bins", b.Name, "key") },
		binDir:  filepath.Join(cache, "bin"),
		tmpRoot: filepath.Join(cache, "bins"),
	}
	var out, log strings.Builder
	var progress []Progress
	b := builder{goPath: goPath, src: src, out: &out, log: &log, heartbeat: 1 << 40,
		progress: func(p Progress) { progress = append(progress, p) }}

	if err := b.buildAll(t.Context(), []Binary{bin("good"), bin("other")}, plan); err != nil {
		t.Fatal(err)
	}
	// One go build of the module's two binaries, reported as it starts.
	if len(progress) != 1 || progress[0].Build != 1 || progress[0].Builds != 1 || !slices.Equal(progress[0].Building, []string{"good", "other"}) || progress[0].Left != 0 {
		t.Errorf("progress %+v, want the one go build of good and other, nothing left after it", progress)
	}
	// The go command's own output: -v names each package it builds.
	if !strings.Contains(log.String(), "example.com/m/good") {
		t.Errorf("the log lacks the go command's output:\n%s", log.String())
	}
	for _, name := range []string{"good", "other"} {
		if target, err := os.Readlink(filepath.Join(plan.binDir, name)); err != nil || target != plan.dest(bin(name)) {
			t.Errorf("%s links to %q, %v; want %s", name, target, err, plan.dest(bin(name)))
		}
	}
	if !strings.Contains(out.String(), "building 2 components of the m module: good, other") {
		t.Errorf("progress lacks the group's start line:\n%s", out.String())
	}
	if left, _ := filepath.Glob(filepath.Join(plan.tmpRoot, ".build-*")); len(left) > 0 {
		t.Errorf("build directories left behind: %v", left)
	}

	err = b.buildAll(t.Context(), []Binary{bin("broken"), bin("good")}, plan)
	if err == nil || !strings.Contains(err.Error(), "not built: broken (example.com/m/broken)") || !strings.Contains(err.Error(), "undefinedCall") {
		t.Errorf("buildAll with a broken binary = %v, want it named with the compiler's error", err)
	}
	if exists(plan.dest(bin("broken"))) {
		t.Error("the broken binary has a cache entry")
	}
}
