package cli

import (
	"strings"
	"testing"
)

// The olm and doctor commands' flag handling, without a cluster.
func TestOLMCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "dry run prints the objects", args: []string{"olm", "subscribe", "demo", "-n", "team", "--catalog-address", "127.0.0.1:1", "--dry-run", "-o", "yaml", "--channel", "stable"},
			wantOut: []string{"note: install modes unknown, the catalog did not answer", "# install mode OwnNamespace: default: the CSV's install modes are unknown",
				"kind: CatalogSource", "address: 127.0.0.1:1", "kind: OperatorGroup", "targetNamespaces:\n  - team", "kind: Subscription", "channel: stable", "sourceNamespace: team"}},
		{name: "dry run as a JSON list", args: []string{"olm", "subscribe", "demo", "-n", "team", "--catalog-image", "quay.io/me/demo-catalog:v1", "--install-mode", "AllNamespaces", "--dry-run", "-o", "json"},
			wantOut: []string{`"kind": "List"`, `"image": "quay.io/me/demo-catalog:v1"`, `"interval": "10m0s"`}},
		{name: "a catalog is required", args: []string{"olm", "subscribe", "demo", "--dry-run"}, wantErr: "[catalog-address catalog-image]"},
		{name: "one catalog only", args: []string{"olm", "subscribe", "demo", "--dry-run", "--catalog-address", "127.0.0.1:1", "--catalog-image", "x/y:z"}, wantErr: "none of the others can be"},
		{name: "bad approval", args: []string{"olm", "subscribe", "demo", "--catalog-address", "127.0.0.1:1", "--approval", "Later"}, wantErr: "must be one of Automatic, Manual"},
		{name: "bad install mode", args: []string{"olm", "subscribe", "demo", "--catalog-address", "127.0.0.1:1", "--install-mode", "MultiNamespace"}, wantErr: "must be one of OwnNamespace, SingleNamespace, AllNamespaces"},
		{name: "single namespace needs a target", args: []string{"olm", "subscribe", "demo", "-n", "x", "--catalog-image", "x/y:z", "--install-mode", "SingleNamespace", "--dry-run"}, wantErr: "needs a target namespace"},
		{name: "dry run does not wait", args: []string{"olm", "subscribe", "demo", "--catalog-image", "x/y:z", "--dry-run", "--wait"}, wantErr: "does not go with --dry-run"},
		{name: "deleting CRDs needs --yes", args: []string{"olm", "unsubscribe", "demo", "--delete-crds"}, wantErr: "add --yes to confirm"},
		{name: "doctor rejects yaml", args: []string{"doctor", "-o", "yaml"}, wantErr: "must be one of text, json"},
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
