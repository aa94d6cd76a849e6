package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Velero's annotations read as Velero reads them.
func TestParseHook(t *testing.T) {
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Annotations: ann},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "db"}}}}
	}
	tests := []struct {
		name    string
		ann     map[string]string
		want    *hook
		wantErr string
	}{
		{name: "no hook", ann: nil},
		{name: "a JSON command, defaults", ann: map[string]string{"pre.hook.backup.velero.io/command": `["/bin/sh","-c","sync"]`},
			want: &hook{pod: "db-0", container: "app", command: []string{"/bin/sh", "-c", "sync"}, timeout: 30 * time.Second}},
		{name: "one string, container, timeout, Continue", ann: map[string]string{
			"pre.hook.backup.velero.io/command": "/quiesce", "pre.hook.backup.velero.io/container": "db",
			"pre.hook.backup.velero.io/timeout": "2m", "pre.hook.backup.velero.io/on-error": "Continue"},
			want: &hook{pod: "db-0", container: "db", command: []string{"/quiesce"}, timeout: 2 * time.Minute, continueOnError: true}},
		{name: "bad on-error", ann: map[string]string{"pre.hook.backup.velero.io/command": "/x", "pre.hook.backup.velero.io/on-error": "Ignore"},
			wantErr: "want Fail or Continue"},
		{name: "bad timeout", ann: map[string]string{"pre.hook.backup.velero.io/command": "/x", "pre.hook.backup.velero.io/timeout": "soon"},
			wantErr: "timeout"},
		{name: "another phase's hook", ann: map[string]string{"post.hook.backup.velero.io/command": "/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHook(pod(tt.ann), preBackup, DefaultHookTimeout)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && (got.pod != tt.want.pod || got.container != tt.want.container ||
				!slices.Equal(got.command, tt.want.command) || got.timeout != tt.want.timeout || got.continueOnError != tt.want.continueOnError) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
