package backupctl

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Schedule creates the schedule kind of the resource as kubectl names it
// from flags and prints what it does; ListSchedules reads the last and
// next runs from their status (written here as the operator would).
func TestScheduleAndList(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "operator", "backup", "testdata", "crd.yaml")},
		CRDs:              api.CRDs(storeGVK),
	})
	ctx := t.Context()
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opts := Options{Config: cfg, Namespace: "shop", Resource: "store", Out: &out}
	flags := ScheduleFlags{Backup: BackupFlags{PVC: "backups:nightly"}, Cron: "0 2 * * *", Keep: 7, KeepFailed: 1}
	spec, err := flags.Spec("web")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Schedule(ctx, opts, spec)
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetKind() != "StoreBackupSchedule" || obj.GetName() != "web-backups" {
		t.Errorf("created %s %s", obj.GetKind(), obj.GetName())
	}
	want := `StoreBackupSchedule shop/web-backups created: backs up web at "0 2 * * *" to claim backups:nightly, keeps 7 Completed and 1 Failed`
	if strings.TrimSpace(out.String()) != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if _, err := Schedule(ctx, opts, spec); err == nil || !strings.Contains(err.Error(), "web-backups") {
		t.Errorf("a second schedule of the same name: %v", err)
	}

	next := metav1.NewTime(time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC))
	obj.Object["status"] = map[string]any{"reason": "Scheduled", "lastBackup": "web-backups-20261203-020000",
		"lastScheduleTime": "2026-12-03T02:00:00Z", "nextScheduleTime": next.Format(time.RFC3339), "kept": int64(2)}
	ri := dynamic.NewForConfigOrDie(cfg).Resource(api.ScheduleResource(storeGVK)).Namespace("shop")
	if _, err := ri.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := ListSchedules(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].NextRun == nil || !rows[0].NextRun.Equal(next.Time) || rows[0].LastBackup != "web-backups-20261203-020000" || rows[0].Kept != 2 || rows[0].Source != "web" {
		t.Errorf("rows %+v", rows)
	}
}
