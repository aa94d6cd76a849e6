package cli

import (
	"strings"
	"testing"
)

// The olm v1 commands' flag handling, without a cluster.
func TestOLMv1Commands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "dry run prints the objects for kubectl create -f",
			args: []string{"olm", "v1", "install", "demo", "-n", "team", "--catalog-image", "127.0.0.1:5000/demo-catalog:v1", "--installer-cluster-role", "cluster-admin",
				"--version", ">=0.1.0 <0.3.0", "-c", "stable", "--dry-run"},
			wantOut: []string{"---\napiVersion: v1\nkind: Namespace", "kind: ClusterCatalog", "ref: 127.0.0.1:5000/demo-catalog:v1", "kind: ServiceAccount\nmetadata:",
				"kind: ClusterRoleBinding", "name: cluster-admin", "kind: ClusterExtension", "version: '>=0.1.0 <0.3.0'", "- stable",
				"olm.operatorframework.io/metadata.name: demo-catalog"}},
		{name: "dry run as a JSON list, olmv1 alias, poll off", args: []string{"olm", "olmv1", "install", "demo", "-n", "team", "--catalog-image", "x.io/c:v1",
			"--use-existing-service-account", "-s", "mine", "--source-poll-interval-minutes", "0", "--dry-run", "-o", "json"},
			wantOut: []string{`"kind": "List"`, `"name": "mine"`, `"ref": "x.io/c:v1"`}},
		{name: "dry run does not wait", args: []string{"olm", "v1", "install", "demo", "--catalog-image", "x.io/c:v1", "--installer-cluster-role", "admin", "--dry-run", "--wait"},
			wantErr: "does not go with --dry-run"},
		{name: "a bad policy", args: []string{"olm", "v1", "install", "demo", "--upgrade-constraint-policy", "Always"}, wantErr: "must be one of CatalogProvided, SelfCertified"},
		{name: "a bad version range", args: []string{"olm", "v1", "install", "demo", "--catalog-image", "x.io/c:v1", "--installer-cluster-role", "admin", "--version", "one", "--dry-run"},
			wantErr: `version range "one"`},
		{name: "upgrade needs a change", args: []string{"olm", "v1", "upgrade", "demo"}, wantErr: "nothing to change"},
		{name: "status needs a name", args: []string{"olm", "v1", "status"}, wantErr: "accepts 1 arg"},
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
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
