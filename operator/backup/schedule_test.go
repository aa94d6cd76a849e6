package backup_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

var scheduleGVK = api.ScheduleKind(storeGVK)

// clock is the schedules' clock: the test moves it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// scheduleWorld is a namespace with the backup and schedule controllers on
// a test clock, without the Helm operator: its Stores never deploy, so a
// Backup of one waits (Pending) and one of a missing target fails.
type scheduleWorld struct {
	*world
	clock *clock
}

func newScheduleWorld(t *testing.T) *scheduleWorld {
	t.Helper()
	clustertest.SkipIfShort(t)
	w := &world{t: t, ctx: t.Context(), cs: kubernetes.NewForConfigOrDie(restConfig), dyn: dynamic.NewForConfigOrDie(restConfig)}
	ns, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "schedule-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.ns = ns.Name
	sw := &scheduleWorld{world: w, clock: &clock{now: time.Now()}}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{w.ns: {}}},
		Client:  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = backup.Add(mgr, backup.Options{Watched: storeGVK, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Config: restConfig, MoverImage: moverImage, Schedules: true, Now: sw.clock.Now, Log: testLog(t),
		Recorder: mgr.GetEventRecorderFor("schedule-test")}, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return sw
}

// at moves the clock and wakes the schedule (its requeue is in real time).
func (w *scheduleWorld) at(t time.Time, schedule string) {
	w.t.Helper()
	w.clock.set(t)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/now":%q}}}`, t.Format(time.RFC3339Nano))
	if _, err := w.res(scheduleGVK).Patch(w.ctx, schedule, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// scheduleStatus waits until the schedule's status satisfies ok.
func (w *scheduleWorld) scheduleStatus(name string, ok func(api.ScheduleStatus) bool) api.ScheduleStatus {
	w.t.Helper()
	var st api.ScheduleStatus
	err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := w.res(scheduleGVK).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st = api.ScheduleStatus{}
		if m, ok := u.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
				return false, err
			}
		}
		return ok(st), nil
	})
	if err != nil {
		var backups []string
		list, _ := w.res(backupGVK).List(w.ctx, metav1.ListOptions{})
		for _, b := range list.Items {
			backups = append(backups, fmt.Sprintf("%s (deleted %v, finalizers %v, status %v)", b.GetName(), b.GetDeletionTimestamp(), b.GetFinalizers(), b.Object["status"]))
		}
		w.t.Fatalf("schedule %s: status %+v; backups:\n%s", name, st, strings.Join(backups, "\n"))
	}
	return st
}

func reasonIs(reason string) func(api.ScheduleStatus) bool {
	return func(st api.ScheduleStatus) bool { return st.Reason == reason }
}

// backupsOf lists the names of the schedule's Backups, sorted.
func (w *scheduleWorld) backupsOf(schedule string) []string {
	w.t.Helper()
	list, err := w.res(backupGVK).List(w.ctx, metav1.ListOptions{LabelSelector: api.ScheduleLabel + "=" + schedule})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, b := range list.Items {
		if b.GetDeletionTimestamp() == nil {
			out = append(out, b.GetName())
		}
	}
	return out
}

// waitBackups waits until the schedule's Backups are exactly want.
func (w *scheduleWorld) waitBackups(schedule string, want ...string) {
	w.t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = w.backupsOf(schedule)
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	})
	if err != nil {
		w.t.Fatalf("backups of %s: %v, want %v", schedule, got, want)
	}
}

// setPhase overwrites a Backup's status phase, as if it had ended so.
func (w *scheduleWorld) setPhase(name string, phase api.Phase) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := w.res(backupGVK).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		u.Object["status"] = map[string]any{"phase": string(phase), "reason": "Test", "message": "set by the test"}
		_, err = w.res(backupGVK).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		w.t.Fatalf("setting backup %s %s: %v", name, phase, err)
	}
}

func scheduledBackup(schedule string, tick time.Time) string {
	return schedule + "-" + tick.UTC().Format("20060102-150405")
}

func scheduleSpec(cron string, extra map[string]any) map[string]any {
	spec := map[string]any{"schedule": cron, "template": backupSpec("shop", "backups")}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

// A schedule creates one Backup per tick, named for the tick and labelled
// with the schedule; a target gone fails the Backup and the schedule says
// why; after the operator was away for many ticks it runs once; it keeps
// `keep` Completed and `keepFailed` Failed Backups and deletes only its own.
func TestScheduleTicksCatchUpAndRetention(t *testing.T) {
	w := newScheduleWorld(t)
	// A Backup of the same CR made by hand: retention never touches it.
	w.create(backupGVK, "by-hand", backupSpec("shop", "backups"))
	w.status(backupGVK, "by-hand", failedWith(backup.ReasonTargetUnavailable))

	w.create(scheduleGVK, "nightly", scheduleSpec("*/5 * * * *", map[string]any{"keep": 2, "keepFailed": 1}))
	st := w.scheduleStatus("nightly", func(st api.ScheduleStatus) bool { return st.NextScheduleTime != nil })
	tick := st.NextScheduleTime.Time
	if tick.Minute()%5 != 0 || tick.Second() != 0 || len(w.backupsOf("nightly")) != 0 {
		t.Fatalf("next run %s; backups before it %v", tick, w.backupsOf("nightly"))
	}

	// Tick 1: the target claim does not exist.
	w.at(tick.Add(time.Second), "nightly")
	b1 := scheduledBackup("nightly", tick)
	w.waitBackups("nightly", b1)
	w.status(backupGVK, b1, failedWith(backup.ReasonTargetUnavailable))
	st = w.scheduleStatus("nightly", reasonIs(backup.ReasonLastBackupFailed))
	if !strings.Contains(st.Message, "TargetUnavailable") || !strings.Contains(st.Message, "backups does not exist") {
		t.Errorf("schedule after a failed backup: %+v", st)
	}
	w.setPhase(b1, api.PhaseCompleted)

	// The operator away for an hour: one run, for the latest tick.
	tick = tick.Add(time.Hour)
	w.at(tick.Add(90*time.Second), "nightly")
	b2 := scheduledBackup("nightly", tick)
	w.waitBackups("nightly", b1, b2)
	w.scheduleStatus("nightly", func(st api.ScheduleStatus) bool { return st.LastBackup == b2 })
	w.eventWith("nightly", "BackupCreated", "created backup "+b2+" for the run of "+tick.UTC().Format(time.RFC3339)+" (11 earlier run(s) skipped")
	w.status(backupGVK, b2, failedWith(backup.ReasonTargetUnavailable))
	w.setPhase(b2, api.PhaseCompleted)

	// Tick 3 completes: three Completed, keep 2: the oldest goes.
	tick = tick.Add(5 * time.Minute)
	w.at(tick, "nightly")
	b3 := scheduledBackup("nightly", tick)
	w.status(backupGVK, b3, failedWith(backup.ReasonTargetUnavailable))
	began := time.Now()
	w.setPhase(b3, api.PhaseCompleted)
	w.waitBackups("nightly", b2, b3)
	t.Logf("retention deleted %s %s after the third backup completed", b1, time.Since(began).Round(time.Millisecond))

	// Ticks 4 and 5 fail: one Failed kept.
	tick = tick.Add(5 * time.Minute)
	w.at(tick, "nightly")
	b4 := scheduledBackup("nightly", tick)
	w.status(backupGVK, b4, failedWith(backup.ReasonTargetUnavailable))
	tick = tick.Add(5 * time.Minute)
	w.at(tick, "nightly")
	b5 := scheduledBackup("nightly", tick)
	w.status(backupGVK, b5, failedWith(backup.ReasonTargetUnavailable))
	w.waitBackups("nightly", b2, b3, b5)
	st = w.scheduleStatus("nightly", func(st api.ScheduleStatus) bool { return st.Kept == 3 })
	if st.LastCompleted != b3 || st.LastBackup != b5 {
		t.Errorf("status after retention: %+v", st)
	}
	if _, err := w.res(backupGVK).Get(w.ctx, "by-hand", metav1.GetOptions{}); err != nil {
		t.Errorf("retention touched a backup made by hand: %v", err)
	}
}

// A run waits while a Backup of the same CR has not ended, and starts
// when it has, within the starting deadline; past it, the run is skipped.
func TestScheduleNeverRunsTwoAtOnce(t *testing.T) {
	w := newScheduleWorld(t)
	w.create(storeGVK, "shop", map[string]any{}) // never Deployed: its backups wait
	w.claim("backups")
	spec := scheduleSpec("*/5 * * * *", map[string]any{"startingDeadline": "3m"})
	spec["template"].(map[string]any)["waitTimeout"] = "1000h"
	w.create(scheduleGVK, "often", spec)
	tick := w.scheduleStatus("often", func(st api.ScheduleStatus) bool { return st.NextScheduleTime != nil }).NextScheduleTime.Time
	w.at(tick, "often")
	b1 := scheduledBackup("often", tick)
	w.waitBackups("often", b1)
	w.status(backupGVK, b1, func(p api.Phase, r string) bool { return p == api.PhasePending && r == backup.ReasonWaitingForRelease })

	tick = tick.Add(5 * time.Minute)
	w.at(tick.Add(time.Minute), "often")
	st := w.scheduleStatus("often", reasonIs(backup.ReasonBackupRunning))
	if !strings.Contains(st.Message, b1) {
		t.Errorf("waiting schedule names %q, want %s", st.Message, b1)
	}
	w.setPhase(b1, api.PhaseFailed)
	b2 := scheduledBackup("often", tick)
	w.waitBackups("often", b1, b2)

	// b2 waits; the next tick is late past its deadline by the time b2 ends.
	tick = tick.Add(5 * time.Minute)
	w.at(tick.Add(time.Minute), "often")
	w.scheduleStatus("often", reasonIs(backup.ReasonBackupRunning))
	w.clock.set(tick.Add(4 * time.Minute))
	w.setPhase(b2, api.PhaseFailed)
	w.eventWith("often", backup.ReasonMissed, "the run of "+tick.UTC().Format(time.RFC3339)+" (and 0 before it) missed its starting deadline of 3m0s")
	w.scheduleStatus("often", func(st api.ScheduleStatus) bool {
		return st.LastScheduleTime != nil && st.LastScheduleTime.Equal(&metav1.Time{Time: tick})
	})
	w.waitBackups("often", b2)
}

// A cron expression that does not parse is named in the status; nothing
// runs. A name too long to label the backups is refused.
func TestScheduleInvalid(t *testing.T) {
	w := newScheduleWorld(t)
	for _, tc := range []struct {
		name, cron, reason, message string
	}{
		{name: "bad-cron", cron: "61 * * * *", reason: backup.ReasonInvalidSchedule, message: `"61 * * * *"`},
		{name: "six-fields", cron: "0 0 * * * *", reason: backup.ReasonInvalidSchedule, message: "expected exactly 5 fields"},
		{name: strings.Repeat("n", 64), cron: "@daily", reason: backup.ReasonInvalidSpec, message: "labels its backups"},
	} {
		t.Run(tc.cron, func(t *testing.T) {
			w.create(scheduleGVK, tc.name, scheduleSpec(tc.cron, nil))
			st := w.scheduleStatus(tc.name, reasonIs(tc.reason))
			if !strings.Contains(st.Message, tc.message) || st.NextScheduleTime != nil {
				t.Errorf("status %+v, want a message with %s", st, tc.message)
			}
		})
	}
	if b := w.backupsOf("bad-cron"); len(b) != 0 {
		t.Errorf("an invalid schedule made backups: %v", b)
	}
}
