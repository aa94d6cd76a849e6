package scorecard

import (
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

// olm-bundle-validation says whether OLM v1 installs the bundle: OLM v0
// does, so each refusal is a suggestion with its fix, and the test passes.
func TestBundleValidationOLMv1(t *testing.T) {
	tests := []struct {
		name   string
		change func(*fixture)
		// want are words of the suggestions about OLM v1, one each; none:
		// the log says it installs.
		want []string
	}{
		{name: "installs"},
		{name: "no AllNamespaces", change: func(f *fixture) { f.csv.Spec.InstallModes[3].Supported = false },
			want: []string{"refuses to install the bundle: it installs operators for all namespaces only"}},
		{name: "a webhook", change: func(f *fixture) {
			f.csv.Spec.WebhookDefinitions = []v1alpha1.WebhookDescription{{Type: v1alpha1.ValidatingAdmissionWebhook, GenerateName: "vvalidated.example.com",
				DeploymentName: "validated-operator-controller-manager", AdmissionReviewVersions: []string{"v1"}}}
		}, want: []string{"refuses to install the bundle: webhooks are not supported"}},
		{name: "a NetworkPolicy", change: func(f *fixture) {
			f.objects = map[string]any{"allow-metrics.yaml": map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
				"metadata": map[string]any{"name": "allow-metrics"}, "spec": map[string]any{"podSelector": map[string]any{}}}}
		}, want: []string{"Kind: NetworkPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "0.1.0")
			if tt.change != nil {
				tt.change(f)
			}
			res := runOne(t, f.write(t, t.TempDir()), scorecardtests.OLMBundleValidation)
			var got []string
			for _, s := range res.Suggestions {
				if strings.HasPrefix(s, "OLM v1") {
					got = append(got, s)
				}
			}
			if len(tt.want) == 0 {
				if len(got) > 0 || !strings.Contains(res.Log, "OLM v1 (operator-controller v1.2.0) installs the bundle") {
					t.Errorf("suggestions %q, log %q", got, res.Log)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("OLM v1 suggestions %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) || !strings.Contains(got[i], "; fix: ") {
					t.Errorf("suggestion %q, want it to say %q and the fix", got[i], w)
				}
			}
			if len(tt.want) > 0 && !strings.Contains(res.Log, "refuses the bundle") {
				t.Errorf("log %q", res.Log)
			}
			if res.State != v1alpha3.PassState {
				t.Errorf("state %s: %q", res.State, res.Errors)
			}
		})
	}
}
