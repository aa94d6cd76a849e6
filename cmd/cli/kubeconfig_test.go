package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// Without a kubeconfig context outside a pod, commands refuse to talk to
// client-go's fallback, an unauthenticated http://localhost:8080.
func TestKubeConfigRefusesTheLocalhostFallback(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kubeconfig string
		want             func(error) bool
	}{
		{"no kubeconfig", "", func(err error) bool { return errors.Is(err, runcmd.ErrNoCluster) }},
		{"a kubeconfig without contexts", empty, func(err error) bool { return err != nil && strings.Contains(err.Error(), "no context in it") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.kubeconfig
			f := &genericclioptions.ConfigFlags{KubeConfig: &path}
			cfg, err := runcmd.KubeConfig(f)
			if !tt.want(err) {
				t.Fatalf("kubeConfig = %v, %v", cfg, err)
			}
			if tt.kubeconfig == "" {
				if cfg, err := scorecardCluster(f); cfg != nil || err != nil {
					t.Fatalf("scorecardCluster = %v, %v; want no cluster and no error", cfg, err)
				}
			}
		})
	}
}
