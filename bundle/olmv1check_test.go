package bundle

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Validate says whether OLM v1 installs the bundle: each reason
// operator-controller refuses it is a warning naming the file and the fix,
// an error with OLMv1.
func TestValidateOLMv1(t *testing.T) {
	const csvFile = "manifests/webapp-operator.clusterserviceversion.yaml"
	tests := []struct {
		name string
		// edit makes the generated bundle one OLM v1 refuses (nil: as generated).
		edit func(t *testing.T, bundleDir string)
		// file and msg locate the finding; fix is a word of its fix.
		file, msg, fix string
	}{{
		name: "as generated",
	}, {
		name: "no AllNamespaces",
		edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, csvFile), "  - supported: true\n    type: AllNamespaces", "  - supported: false\n    type: AllNamespaces")
		},
		file: csvFile, msg: "installs operators for all namespaces only", fix: "SingleOwnNamespaceInstallSupport",
	}, {
		name: "a webhook",
		edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, csvFile), "  version: 0.1.0\n", "  version: 0.1.0\n  webhookdefinitions:\n  - {type: ValidatingAdmissionWebhook, generateName: vwebapp.example.com, deploymentName: webapp-operator-controller-manager, admissionReviewVersions: [v1], sideEffects: None, containerPort: 443, targetPort: 9443, webhookPath: /validate}\n")
		},
		file: csvFile, msg: "webhooks are not supported", fix: "x-kubernetes-validations",
	}, {
		name: "a NetworkPolicy, which OLM v0 installs",
		edit: func(t *testing.T, d string) {
			writeFile(t, filepath.Join(d, "manifests", "allow-metrics_networking.k8s.io_v1_networkpolicy.yaml"),
				"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: allow-metrics\nspec:\n  podSelector: {}\n")
		},
		file: "manifests/allow-metrics_networking.k8s.io_v1_networkpolicy.yaml", msg: "Kind: NetworkPolicy", fix: "leave the NetworkPolicy out",
	}, {
		name: "a dependency",
		edit: func(t *testing.T, d string) {
			writeFile(t, filepath.Join(d, "metadata", "dependencies.yaml"), "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0'}\n")
		},
		file: "metadata/dependencies.yaml", msg: "declares dependencies (olm.package (olm.package.required))", fix: "ClusterExtension of its own",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := generatedProject(t)
			bundleDir := filepath.Join(dir, "bundle")
			if tt.edit != nil {
				tt.edit(t, bundleDir)
			}
			for _, strict := range []bool{false, true} {
				rep, err := Validate(ValidateOptions{Dir: bundleDir, OLMv1: strict})
				var found []Finding
				for _, f := range rep.Findings {
					if f.Type == FindingTypeOLMv1 {
						found = append(found, f)
					}
				}
				if tt.edit == nil {
					if err != nil || len(found) > 0 || !rep.OLMv1.Installs {
						t.Fatalf("OLMv1 %t: error %v, findings %+v, verdict %+v", strict, err, found, rep.OLMv1)
					}
					continue
				}
				wantLevel := levelWarning
				if strict {
					wantLevel = levelError
				}
				if strict != errors.Is(err, ErrInvalid) {
					t.Errorf("OLMv1 %t: error = %v", strict, err)
				}
				if rep.OLMv1 == nil || rep.OLMv1.Installs || len(found) != 1 {
					t.Fatalf("OLMv1 %t: verdict %+v, findings %+v, want one", strict, rep.OLMv1, found)
				}
				f := found[0]
				if f.Level != wantLevel || f.File != tt.file || !strings.Contains(f.Message, tt.msg) || !strings.Contains(f.Message, "fix: ") || !strings.Contains(f.Message, tt.fix) {
					t.Errorf("OLMv1 %t: finding %+v, want a %s in %s about %q with a fix saying %q", strict, f, wantLevel, tt.file, tt.msg, tt.fix)
				}
				var text strings.Builder
				if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "OLM v1 (operator-controller v1.2.0) refuses the bundle") {
					t.Errorf("text output %q, %v", text.String(), err)
				}
			}
		})
	}
}
