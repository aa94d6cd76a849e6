package toolchain

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

//go:generate sh embed.sh

// The tools modules, copied from tools/, tools/node/, tools/storage/,
// tools/csi/ and tools/olmv1/ by go generate (see
// embed.sh). A test keeps the copies equal to the originals.
//
//go:embed all:modules
var embedded embed.FS

// Tools modules: the directories under modules/, and the go command's
// working directory under the cache's src/ when it builds from them.
const (
	// clusterModule builds the control plane, kubectl, kwok, OLM and the
	// node agents that share the Kubernetes version (kubelet, kube-proxy).
	clusterModule = "cluster"
	// nodeModule builds the container runtime, networking, DNS, the registry
	// and the small programs of our own that images need.
	nodeModule = "node"
	// storageModule builds the cluster's storage: the object store and the
	// hostPath volumes' permissions. A module of its own, so that its
	// dependencies never move the container runtime's.
	storageModule = "storage"
	// csiModule builds the real node's CSI storage: our driver, the
	// external sidecars and the snapshot controller. A module of its own,
	// pinned to the cluster module's Kubernetes line and versions (see
	// TestToolsModulesOnTheClusterLine), so the packages they share compile once.
	csiModule = "csi"
	// olmv1Module builds OLM v1 (catalogd, operator-controller). A module
	// of its own, pinned to the cluster module's Kubernetes line and
	// versions like csiModule, with its own boxcutter (tools/olmv1/boxcutter:
	// the module proxy serves none).
	olmv1Module = "olmv1"
)

// moduleNames are the tools modules, as directories under modules/.
var moduleNames = []string{clusterModule, nodeModule, storageModule, csiModule, olmv1Module}

// embedSuffix marks the embedded copies.
const embedSuffix = ".embed"

// module is one embedded tools module.
type module struct {
	name string
	file *modfile.File
}

// modules are the embedded tools modules by name.
type modules map[string]module

func loadModules() (modules, error) {
	out := modules{}
	for _, name := range moduleNames {
		data, err := embedded.ReadFile("modules/" + name + "/go.mod" + embedSuffix)
		if err != nil {
			return nil, fmt.Errorf("reading the embedded %s tools module: %w", name, err)
		}
		f, err := modfile.Parse(name+"/go.mod", data, nil)
		if err != nil {
			return nil, fmt.Errorf("parsing the embedded %s tools module: %w", name, err)
		}
		out[name] = module{name: name, file: f}
	}
	return out, nil
}

// version returns the version a binary is built at: its module's required
// version, or "local" for a main package of the tools module itself.
func (ms modules) version(b Binary) string {
	m := ms[b.source()]
	if m.file.Module != nil && b.Module == m.file.Module.Mod.Path {
		return "local"
	}
	for _, r := range m.file.Require {
		if r.Mod.Path == b.Module {
			return r.Mod.Version
		}
	}
	return ""
}

// key names the cache entry: every embedded file, how each binary is built,
// and the Go version, since binaries built by another Go may differ.
func (ms modules) key(goVersion string) string {
	var parts [][]byte
	for _, f := range embeddedFiles() {
		data, _ := embedded.ReadFile(f)
		parts = append(parts, []byte(f), data)
	}
	var recipe strings.Builder
	for _, b := range allBinaries() {
		fmt.Fprintf(&recipe, "%s %s %s tags=%v cgo=%v %v\n", b.Name, b.source(), b.Package, b.Tags, b.CGO, versionLDFlags(b.Module, ms.version(b)))
	}
	return goVersion + "-" + hashOf(append(parts, []byte(recipe.String()))...)
}

// binKey names one binary's cache entry: the files of the tools module that
// builds it and how it is built, so that a change to the other module
// rebuilds nothing of this one. Each subdirectory of a tools module is one
// program of ours, whose files key that program alone: a change to
// hello-server rebuilds hello-server, not containerd.
func (ms modules) binKey(goVersion string, b Binary) string {
	return ms.binKeyOf(goVersion, b, embeddedFiles(), func(f string) []byte {
		data, _ := embedded.ReadFile(f)
		return data
	})
}

func (ms modules) binKeyOf(goVersion string, b Binary, files []string, read func(string) []byte) string {
	root := "modules/" + b.source() + "/"
	uses := ms.sourcesOf(b)
	var parts [][]byte
	for _, f := range files {
		rel, ok := strings.CutPrefix(f, root)
		if !ok {
			continue
		}
		if strings.Contains(rel, "/") && !slices.ContainsFunc(uses, func(p string) bool { return strings.HasPrefix(rel, p) }) {
			continue // another program's source
		}
		parts = append(parts, []byte(f), read(f))
	}
	recipe := fmt.Sprintf("%s %s tags=%v cgo=%v %v overlay=%v", b.Package, b.Module, b.Tags, b.CGO, versionLDFlags(b.Module, ms.version(b)), b.Overlay)
	return goVersion + "-" + hashOf(append(parts, []byte(recipe))...)
}

// sourcesOf are the paths under b's tools module, other than its go.mod and
// go.sum, that b is built from: its own program's directory, the modules
// the tools module replaces with a directory of its own, and b's overlay
// files (each path ends in "/" when a directory).
func (ms modules) sourcesOf(b Binary) []string {
	var out []string
	m := ms[b.source()].file
	if m.Module != nil {
		if rel, ok := strings.CutPrefix(b.Package, m.Module.Mod.Path+"/"); ok {
			out = append(out, rel+"/")
		}
	}
	for _, r := range m.Replace {
		if dir, ok := strings.CutPrefix(r.New.Path, "./"); ok && r.New.Version == "" {
			out = append(out, path.Clean(dir)+"/")
		}
	}
	for _, src := range b.Overlay {
		out = append(out, src+embedSuffix)
	}
	return out
}

// embeddedFiles lists the embedded files in a stable order.
func embeddedFiles() []string {
	var files []string
	_ = fs.WalkDir(embedded, "modules", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	sort.Strings(files)
	return files
}

// materialize writes the named module where the go command can build it.
func materialize(name, dir string) error {
	root := "modules/" + name
	return fs.WalkDir(embedded, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := embedded.ReadFile(path)
		if err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, root+"/"), embedSuffix)
		dest := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return fmt.Errorf("writing the %s tools module: %w", name, err)
		}
		if err := atomicfile.WriteFile(dest, data, 0o644); err != nil {
			return fmt.Errorf("writing the %s tools module: %w", name, err)
		}
		return nil
	})
}

// Versions returns the version of each component's module, without building.
func Versions() (map[string]string, error) {
	ms, err := loadModules()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range allBinaries() {
		out[b.Name] = ms.version(b)
	}
	return out, nil
}
