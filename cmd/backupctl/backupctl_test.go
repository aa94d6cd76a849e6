package backupctl

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

var storeGVK = schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "Store"}

// Backup and Restore create their object from the kind as kubectl names
// it, print each change of the status, return nil when it is Completed and
// ErrFailed with the reason when it Failed. The test plays the operator.
func TestFollow(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "operator", "backup", "testdata", "crd.yaml")},
		CRDs:              api.CRDs(storeGVK),
	})
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	// operator writes the statuses, one after the other, to the object.
	operator := func(gvk schema.GroupVersionKind, name string, statuses ...map[string]any) {
		ri := dyn.Resource(gvk.GroupVersion().WithResource(api.Plural(gvk.Kind))).Namespace("shop")
		go func() {
			for _, st := range statuses {
				_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
					u, err := ri.Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false, nil
					}
					u.Object["status"] = st
					_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
					return err == nil, nil
				})
				time.Sleep(1500 * time.Millisecond)
			}
		}()
	}
	var out bytes.Buffer
	opts := Options{Config: cfg, Namespace: "shop", Resource: "store", Name: "nightly", Timeout: 30 * time.Second, Out: &out}
	operator(api.BackupKind(storeGVK), "nightly",
		map[string]any{"phase": "Running", "reason": "Copying", "volumes": []any{map[string]any{"claimName": "data", "phase": "Running"}}},
		map[string]any{"phase": "Completed", "reason": "Completed", "size": int64(2048), "duration": "3s", "volumes": []any{map[string]any{"claimName": "data", "phase": "Completed"}}},
	)
	obj, err := Backup(ctx, opts, api.BackupSpec{Source: "web", Target: api.Target{PVC: &api.PVCTarget{ClaimName: "backups"}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if obj.GetKind() != "StoreBackup" {
		t.Errorf("created a %s", obj.GetKind())
	}
	for _, want := range []string{"StoreBackup shop/nightly created", "Running (Copying), 0/1 volume(s)", "Completed (Completed), 1/1 volume(s), 2048 bytes in 3s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	opts.Resource, opts.Name = "stores.charts.example.com", "back"
	operator(api.RestoreKind(storeGVK), "back", map[string]any{"phase": "Failed", "reason": "AlreadyExists", "message": "Store web exist(s)"})
	_, err = Restore(ctx, opts, api.RestoreSpec{BackupName: "nightly"})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "AlreadyExists") {
		t.Errorf("restore error %v, want ErrFailed with the reason\n%s", err, out.String())
	}

	opts.Resource = "nosuchkind"
	if _, err := Backup(ctx, opts, api.BackupSpec{Source: "web"}); err == nil || !strings.Contains(err.Error(), "nosuchkind") {
		t.Errorf("unknown kind: %v", err)
	}
}
