package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

const module = "github.com/chartpilot/chartpilot"

// buildTime are what the operator image must not carry: chartpilot's
// build-time packages and the modules only they need.
var buildTime = []string{
	module + "/scaffold", module + "/bundle", module + "/catalog", module + "/cluster",
	module + "/rbac", module + "/chart", module + "/scorecard", module + "/olm",
	module + "/doctor", module + "/crdschema", module + "/apply",
	module + "/cmd/cli", module + "/cmd/demo", module + "/internal/ociimage",
	"github.com/operator-framework", "github.com/google/go-containerregistry",
}

// The runtime binary imports none of the build-time packages: what it
// imports is what the operator image carries and maps into memory.
func TestNoBuildTimePackages(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	importers := map[string][]string{}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs = append(pkgs, fields[0])
		for _, imp := range fields[1:] {
			importers[imp] = append(importers[imp], fields[0])
		}
	}
	if !slices.Contains(pkgs, module+"/operator") {
		t.Fatalf("go list found no %s/operator among %d packages: not the runtime's graph", module, len(pkgs))
	}
	for _, pkg := range pkgs {
		for _, bad := range buildTime {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("%s is in the runtime's graph, imported by %s", pkg, strings.Join(importers[pkg], ", "))
			}
		}
	}
}

// The binary has the run command with chartpilot run's flags, and the
// flags that reach a cluster.
func TestRunFlags(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"run", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--watches-file", "--leader-elect", "--leader-elect-lease-duration", "--leader-elect-renew-deadline",
		"--leader-elect-retry-period", "--shard", "--max-concurrent-reconciles", "--reconcile-period",
		"--failure-backoff", "--failure-backoff-max", "--drift-repairs", "--drift-window",
		"--metrics-bind-address", "--metrics-secure", "--metrics-cert-path", "--metrics-cert-name", "--metrics-cert-key", "--enable-http2", "--metrics-release-series-limit",
		"--health-probe-bind-address", "--kubeconfig", "--zap-log-level"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("run --help does not mention %s:\n%s", flag, out.String())
		}
	}
}
