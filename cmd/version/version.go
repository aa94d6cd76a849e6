package version

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// Info is chartpilot's version report.
type Info struct {
	Chartpilot string `json:"chartpilot"`
	Revision   string `json:"revision,omitempty"`
	Go         string `json:"go"`
	// Libraries maps a module path to its version, for the modules in libraries.
	Libraries []Module `json:"libraries"`
	// Cluster maps each local cluster component to the version it is built from.
	Cluster []Module `json:"cluster"`
}

// Module is a name and a version.
type Module struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// libraries are the dependencies whose versions matter to operator authors.
var libraries = []string{
	"k8s.io/client-go",
	"sigs.k8s.io/controller-runtime",
	"helm.sh/helm/v4",
	"github.com/operator-framework/api",
	"github.com/operator-framework/operator-registry",
}

// Get reads the version report.
func Get() (Info, error) {
	info := Info{Chartpilot: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			info.Chartpilot = v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Revision = s.Value
			}
		}
		deps := map[string]string{}
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps[d.Path] = d.Version
		}
		for _, l := range libraries {
			if v, ok := deps[l]; ok {
				info.Libraries = append(info.Libraries, Module{Name: l, Version: v})
			}
		}
	}
	versions, err := toolchain.Versions()
	if err != nil {
		return info, err
	}
	for name, v := range versions {
		info.Cluster = append(info.Cluster, Module{Name: name, Version: v})
	}
	sort.Slice(info.Cluster, func(i, j int) bool { return info.Cluster[i].Name < info.Cluster[j].Name })
	return info, nil
}

// Builder names this chartpilot in what it generates (a bundle's metrics
// builder label and its CSV's builder annotation): "chartpilot-" and the
// release version. A build from source says "chartpilot-devel": its version,
// a pseudo-version of the commit when the go command reads the VCS, would
// change every generated bundle at each commit, and committed bundle files
// (the repository's own bundle.Dockerfile) could never be up to date.
func Builder() string {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
	}
	return builderName(v)
}

func builderName(v string) string {
	if !semver.IsValid(v) || module.IsPseudoVersion(v) || strings.Contains(v, "+") {
		return "chartpilot-devel"
	}
	return "chartpilot-" + v
}

// Text writes the report for people.
func (i Info) Text(w io.Writer) error {
	fmt.Fprintf(w, "chartpilot %s", i.Chartpilot)
	if i.Revision != "" {
		fmt.Fprintf(w, " (%s)", i.Revision)
	}
	fmt.Fprintf(w, ", built with %s\n", i.Go)
	if len(i.Libraries) > 0 {
		fmt.Fprintln(w, "libraries:")
		for _, m := range i.Libraries {
			fmt.Fprintf(w, "  %-50s %s\n", m.Name, m.Version)
		}
	}
	fmt.Fprintln(w, "local cluster components:")
	for _, m := range i.Cluster {
		fmt.Fprintf(w, "  %-50s %s\n", m.Name, m.Version)
	}
	return nil
}

// modulePath is chartpilot's module path, as go.mod declares it.
const modulePath = "github.com/chartpilot/chartpilot"

// SourceDir is the chartpilot module this binary was built from, when it
// was built without -trimpath (a development build, e.g. `make build`) and
// the source is still where it was; else "". It is where a cross-build of
// chartpilot (for another platform's operator image) can start from.
func SourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // <root>/internal/version/version.go
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
		return ""
	}
	return root
}
