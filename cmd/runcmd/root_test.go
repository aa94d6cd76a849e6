package runcmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The operator image's binary has the run command with chartpilot run's
// flags, and the flags that reach a cluster.
func TestOperatorRootRunFlags(t *testing.T) {
	var out bytes.Buffer
	cmd := NewOperatorRoot(genericiooptions.IOStreams{Out: &out, ErrOut: &out})
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
