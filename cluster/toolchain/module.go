package toolchain

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

//go:generate sh -c "cp ../../tools/go.mod module/go.mod.embed && cp ../../tools/go.sum module/go.sum.embed && cp ../../tools/tools.go module/tools.go.embed"

// The tools module, copied from tools/ by go generate (a directory holding a
// go.mod is a module of its own and cannot be embedded from here). A test
// keeps the copies equal to the originals.
var (
	//go:embed module/go.mod.embed
	goMod []byte
	//go:embed module/go.sum.embed
	goSum []byte
	//go:embed module/tools.go.embed
	toolsGo []byte
)

// module is the parsed tools module.
type module struct {
	file *modfile.File
}

func loadModule() (module, error) {
	f, err := modfile.Parse("tools/go.mod", goMod, nil)
	if err != nil {
		return module{}, fmt.Errorf("parsing the embedded tools module: %w", err)
	}
	return module{file: f}, nil
}

// version returns the required version of a module path, or "" if absent.
func (m module) version(path string) string {
	for _, r := range m.file.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	return ""
}

// key names the cache entry: the module's requirements, how each binary is
// built, and the Go version, since binaries built by another Go may differ.
func (m module) key(goVersion string) string {
	var recipe strings.Builder
	for _, b := range Binaries() {
		fmt.Fprintf(&recipe, "%s %s %v\n", b.Name, b.Package, versionLDFlags(b.Module, m.version(b.Module)))
	}
	return goVersion + "-" + hashOf(goMod, goSum, []byte(recipe.String()))
}

// materialize writes the module where the go command can build it.
func (m module) materialize(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for name, data := range map[string][]byte{"go.mod": goMod, "go.sum": goSum, "tools.go": toolsGo} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("writing the tools module: %w", err)
		}
	}
	return nil
}

// Versions returns the version of each component's module, without building.
func Versions() (map[string]string, error) {
	m, err := loadModule()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range Binaries() {
		out[b.Name] = m.version(b.Module)
	}
	return out, nil
}
