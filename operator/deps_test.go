package operator

import (
	"os/exec"
	"strings"
	"testing"
)

// The runtime imports none of the build-time packages: what an operator
// image runs stays small, and the build-time side (Prometheus's parsers,
// OLM's validators, kustomize) cannot leak into it. Nor does it import an
// API server's authentication and authorization stacks (CEL, OpenTelemetry,
// gRPC, konnectivity: 14.5 MB of the binary), which controller-runtime's
// metrics filter brings; metricsauth's filter does the two reviews alone.
func TestRuntimeImportsNoBuildTimePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/prometheus/prometheus/",
		"github.com/chartpilot/chartpilot/scaffold", "github.com/chartpilot/chartpilot/bundle",
		"github.com/chartpilot/chartpilot/scorecard", "github.com/chartpilot/chartpilot/catalog",
		"github.com/chartpilot/chartpilot/internal/promrule",
		"sigs.k8s.io/controller-runtime/pkg/metrics/filters",
		"k8s.io/apiserver/pkg/authentication", "k8s.io/apiserver/pkg/authorization",
		"github.com/google/cel-go", "go.opentelemetry.io/otel", "google.golang.org/grpc",
		"sigs.k8s.io/apiserver-network-proxy",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("the runtime depends on %s", pkg)
			}
		}
	}
}
