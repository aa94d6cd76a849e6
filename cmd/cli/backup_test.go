package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The backup, restore and schedule commands check their flags before
// they reach a cluster, each error naming the flag.
func TestBackupCommandsValidate(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: shop}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		// wantErr is a substring of the error.
		wantErr string
	}{
		{name: "backup without a target", args: []string{"backup", "store", "web"}, wantErr: "give --pvc or --s3-bucket"},
		{name: "backup with two targets", args: []string{"backup", "store", "web", "--pvc", "b", "--s3-bucket", "x"}, wantErr: "--pvc and --s3-bucket"},
		{name: "backup to S3 without credentials", args: []string{"backup", "store", "web", "--s3-bucket", "x", "--s3-endpoint", "e"}, wantErr: "--s3-credentials-secret"},
		{name: "backup with a zero timeout", args: []string{"backup", "store", "web", "--pvc", "b", "--timeout", "0s"}, wantErr: "--timeout 0s"},
		{name: "backup with one argument", args: []string{"backup", "store"}, wantErr: "accepts 2 arg(s)"},
		{name: "restore with a negative timeout", args: []string{"restore", "store", "nightly", "--timeout", "-1s"}, wantErr: "--timeout -1s"},
		{name: "schedule without cron", args: []string{"schedule", "store", "web", "--pvc", "b"}, wantErr: "--cron is required"},
		{name: "schedule with a bad cron", args: []string{"schedule", "store", "web", "--pvc", "b", "--cron", "61 * * * *"}, wantErr: `--cron: schedule "61 * * * *"`},
		{name: "schedule keeping none", args: []string{"schedule", "store", "web", "--pvc", "b", "--cron", "@daily", "--keep", "0"}, wantErr: "--keep 0"},
		{name: "schedule without a name", args: []string{"schedule", "store", "--cron", "@daily"}, wantErr: "or --list"},
		{name: "schedule --list with a name", args: []string{"schedule", "store", "web", "--list"}, wantErr: "--list takes RESOURCE only"},
		{name: "schedule rejects a bad keep", args: []string{"schedule", "store", "web", "--keep", "many"}, wantErr: "invalid argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, append(tt.args, "--kubeconfig", kubeconfig)...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q\n%s", err, tt.wantErr, out)
			}
		})
	}
}
