package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// TestApplyDeleteCommands runs what make install, deploy, undeploy and
// uninstall run in a freshly scaffolded project, against a real API server.
func TestApplyDeleteCommands(t *testing.T) {
	charts := filepath.Join("..", "..", "chart", "testdata", "charts")
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	if out, err := run(t, "init", dir, "--chart", filepath.Join(charts, "webapp")); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	// config/default as scaffolded needs no prometheus-operator CRDs.
	env := &envtest.Environment{}
	clustertest.StartAPIServer(t, env)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	crd, def := filepath.Join(dir, "config", "crd"), filepath.Join(dir, "config", "default")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		// wantOut are substrings of the output, in this order.
		wantOut []string
	}{
		{name: "dry run prints names in apply order", args: []string{"apply", "-k", def, "--dry-run", "-o", "name"},
			wantOut: []string{"CustomResourceDefinition.apiextensions.k8s.io/webapps.charts.example.com\nNamespace/webapp-operator-system\n", "Deployment.apps/webapp-operator-controller-manager"}},
		{name: "dry run yaml with the image", args: []string{"apply", "-k", def, "--dry-run", "--image", "controller=127.0.0.1:5000/op:v1"},
			wantOut: []string{"---\napiVersion: apiextensions.k8s.io/v1\n", "image: 127.0.0.1:5000/op:v1"}},
		{name: "delete dry run in reverse", args: []string{"delete", "-k", def, "--dry-run", "-o", "name"},
			wantOut: []string{"Deployment.apps/webapp-operator-controller-manager", "Namespace/webapp-operator-system\nCustomResourceDefinition.apiextensions.k8s.io/webapps.charts.example.com\n"}},
		{name: "a bad image", args: []string{"apply", "-k", def, "--image", "op:v1"}, wantErr: "--image: image \"op:v1\": want NAME=REF"},
		{name: "a bad output", args: []string{"apply", "-k", def, "--dry-run", "-o", "wide"}, wantErr: "must be one of yaml, json, name"},
		{name: "make install", args: []string{"apply", "--kubeconfig", kubeconfig, "-k", crd},
			wantOut: []string{"customresourcedefinitions.apiextensions.k8s.io/webapps.charts.example.com created"}},
		{name: "make deploy", args: []string{"apply", "--kubeconfig", kubeconfig, "-k", def, "--image", "controller=127.0.0.1:5000/op:v1"},
			wantOut: []string{"namespaces/webapp-operator-system created", "deployments.apps/webapp-operator-controller-manager created"}},
		// envtest runs no namespace controller: the Namespace would stay
		// Terminating, so this run does not wait (apply's tests cover --wait).
		{name: "make undeploy", args: []string{"delete", "--kubeconfig", kubeconfig, "-k", def, "--wait=false"},
			wantOut: []string{"deployments.apps/webapp-operator-controller-manager deleted", "customresourcedefinitions.apiextensions.k8s.io/webapps.charts.example.com deleted"}},
		// The CRD may still be finalizing (deleted again, then waited for) or gone (not found): both succeed.
		{name: "make uninstall after undeploy", args: []string{"delete", "--kubeconfig", kubeconfig, "-k", crd, "--timeout", "30s"},
			wantOut: []string{"customresourcedefinitions.apiextensions.k8s.io/webapps.charts.example.com "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			rest := out
			for _, want := range tt.wantOut {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", want, out)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}
