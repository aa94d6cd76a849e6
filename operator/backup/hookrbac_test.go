package backup_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// An operator without pods/exec (a chart whose pods showed no hook) that
// meets a pod carrying one runs no hook and says why: HookNotPermitted,
// naming the pod, the annotation and backupHooks. With pods/exec it goes
// on to run the hook (which fails here: envtest runs no pod).
func TestHookWithoutPodsExec(t *testing.T) {
	clustertest.SkipIfShort(t)
	pod := func(ann map[string]string) []corev1.Pod {
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default", Annotations: ann},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}}}}
	}
	hooked := map[string]string{api.PreBackup.CommandAnnotation(): "/freeze"}
	// nobody is a user bound to nothing: what an operator without
	// pods/exec is for hooks.
	nobody := rest.CopyConfig(restConfig)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	tests := []struct {
		name   string
		config *rest.Config
		pods   []corev1.Pod
		// reason is the status reason of the error, "" for none.
		reason string
		// message are parts of the error.
		message []string
	}{
		{name: "no pods/exec, a hook", config: nobody, pods: pod(hooked), reason: backup.ReasonHookNotPermitted,
			message: []string{"pod db-0 carries pre.hook.backup.velero.io/command", "pods/exec", "backupHooks: true"}},
		{name: "no pods/exec, no hook", config: nobody, pods: pod(map[string]string{api.PreBackup.Key(api.HookContainer): "db"})},
		{name: "pods/exec, a hook", config: restConfig, pods: pod(hooked), reason: backup.ReasonHookFailed, message: []string{"hook in pod db-0, container db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &backup.Options{Config: tt.config}
			err := opts.RunHooks(t.Context(), tt.pods, api.PreBackup)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("RunHooks: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("RunHooks succeeded")
			}
			if got := backup.HookReason(err); got != tt.reason || errors.Is(err, backup.ErrHookNotPermitted) != (tt.reason == backup.ReasonHookNotPermitted) {
				t.Errorf("reason %s, want %s: %v", got, tt.reason, err)
			}
			for _, m := range tt.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
		})
	}
}
