package backup

import (
	"reflect"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

var (
	running   = volumeLook{running: true}
	missing   = volumeLook{missing: true}
	moverDied = volumeLook{failed: true, message: "disk full", why: problem{ReasonMoverFailed, "copying claim data (pod m) failed: disk full"}}
	snapError = volumeLook{failed: true, message: "no quota", why: problem{ReasonSnapshotFailed, "VolumeSnapshot s of claim data: no quota"}}
)

// Each branch of a backup's plan, from what observe saw.
func TestPlanBackup(t *testing.T) {
	blocked := &problem{ReasonTargetUnavailable, "target PersistentVolumeClaim ns/archive does not exist"}
	tests := []struct {
		name string
		seen backupSeen
		want plan
	}{
		{"a check failed (target, source, image, snapshot class)", backupSeen{seen: seen{blocked: blocked}}, plan{action: actFail, why: *blocked}},
		{"a blocked check wins over an unsettled release", backupSeen{seen: seen{blocked: blocked}, notSettled: "upgrading", timeout: time.Minute}, plan{action: actFail, why: *blocked}},
		{"the release is not settled: wait", backupSeen{notSettled: "Store web is not Deployed", waited: 10 * time.Second, timeout: time.Minute},
			plan{action: actWait, why: problem{ReasonWaitingForRelease, "Store web is not Deployed"}, requeue: 2 * pollPeriod}},
		{"the wait ends at the timeout", backupSeen{notSettled: "x", waited: 59 * time.Second, timeout: time.Minute},
			plan{action: actWait, why: problem{ReasonWaitingForRelease, "x"}, requeue: time.Second}},
		{"waited past the timeout: fail", backupSeen{notSettled: "x", waited: time.Minute, timeout: time.Minute},
			plan{action: actFail, why: problem{ReasonReleaseNotSettled, "waited 1m0s for the release to settle, nothing copied: x"}}},
		{"all checks pass: start", backupSeen{}, plan{action: actStart}},
		{"running: a volume failed", backupSeen{running: true, seen: seen{volumes: []volumeLook{running, moverDied, snapError}}}, plan{action: actFail, why: moverDied.why}},
		{"running: make what is missing", backupSeen{running: true, seen: seen{volumes: []volumeLook{{}, missing, running, missing}}}, plan{action: actPoll, create: []int{1, 3}}},
		{"running: still copying", backupSeen{running: true, seen: seen{volumes: []volumeLook{running, {}}}}, plan{action: actPoll}},
		{"running: the contents are lost", backupSeen{running: true, seen: seen{blocked: &problem{ReasonContentsLost, "gone"}}}, plan{action: actFail, why: problem{ReasonContentsLost, "gone"}}},
		{"running: all done", backupSeen{running: true, seen: seen{volumes: []volumeLook{{}, {size: 3}}}}, plan{action: actFinish}},
		{"running: no volumes", backupSeen{running: true}, plan{action: actFinish}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planBackup(tt.seen); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Each branch of a restore's plan, from what observe saw.
func TestPlanRestore(t *testing.T) {
	granted := &problem{ReasonTargetNotGranted, "namespace b does not let Restores of namespace a in"}
	failedCond := &metav1.Condition{Type: "ReleaseFailed", Status: metav1.ConditionTrue, Reason: "InstallError", Message: "boom"}
	tests := []struct {
		name string
		seen restoreSeen
		want plan
	}{
		{"not granted, at any stage", restoreSeen{stage: stageRelease, seen: seen{blocked: granted}, crReady: true}, plan{action: actFail, why: *granted}},
		{"a check before the start failed", restoreSeen{seen: seen{blocked: &problem{ReasonAlreadyExists, "Secret s exist(s)"}}}, plan{action: actFail, why: problem{ReasonAlreadyExists, "Secret s exist(s)"}}},
		{"all checks pass: start", restoreSeen{}, plan{action: actStart}},
		{"volumes: one failed", restoreSeen{stage: stageVolumes, seen: seen{volumes: []volumeLook{missing, moverDied}}}, plan{action: actFail, why: moverDied.why}},
		{"volumes: make the missing movers", restoreSeen{stage: stageVolumes, seen: seen{volumes: []volumeLook{missing, running}}}, plan{action: actPoll, create: []int{0}}},
		{"volumes: refilled, create the CR", restoreSeen{stage: stageVolumes, seen: seen{volumes: []volumeLook{{}, {}}}}, plan{action: actCreateCR}},
		{"release: failed", restoreSeen{stage: stageRelease, cr: "Store ns/web", crFailed: failedCond},
			plan{action: actFail, why: problem{ReasonReleaseFailed, "the release of Store ns/web: InstallError: boom"}}},
		{"release: not ready past the timeout", restoreSeen{stage: stageRelease, cr: "Store ns/web", crAge: DefaultReleaseTimeout + time.Second},
			plan{action: actFail, why: problem{ReasonReleaseFailed, "Store ns/web is not Deployed and Ready 5m0s after its creation"}}},
		{"release: not ready yet", restoreSeen{stage: stageRelease, crAge: time.Minute}, plan{action: actPoll}},
		{"release: ready", restoreSeen{stage: stageRelease, crReady: true, crAge: time.Hour}, plan{action: actFinish}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planRestore(tt.seen); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// What a look at a mover pod, a snapshot or a restored claim finds, and
// what it writes into the volume's result.
func TestVolumeLooks(t *testing.T) {
	terminated := func(phase corev1.PodPhase, msg string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}}}
	}
	size := resource.MustParse("1Ki")
	tests := []struct {
		name string
		look volumeLook
		want volumeLook
		// phase is the volume's after recordVolume.
		phase api.Phase
	}{
		{"no mover pod", moverLook(nil, "m", "copying claim data"), missing, api.PhasePending},
		{"a mover runs", moverLook(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "m", "copying"), running, api.PhaseRunning},
		{"a mover failed", moverLook(terminated(corev1.PodFailed, "disk full"), "m", "copying claim data"), moverDied, api.PhaseFailed},
		{"a mover's result unreadable", moverLook(terminated(corev1.PodSucceeded, "not json"), "m", "copying"), volumeLook{failed: true}, api.PhaseFailed},
		{"a mover succeeded", moverLook(terminated(corev1.PodSucceeded, `{"size":5,"files":2}`), "m", "copying"), volumeLook{size: 5, files: 2}, api.PhaseCompleted},
		{"no snapshot", snapshotLook(nil, "data"), missing, api.PhasePending},
		{"a snapshot not ready", snapshotLook(&snapv1.VolumeSnapshot{}, "data"), running, api.PhaseRunning},
		{"a snapshot failed", snapshotLook(&snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: &snapv1.VolumeSnapshotStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To("no quota")}}}, "data"), snapError, api.PhaseFailed},
		{"a snapshot ready", snapshotLook(&snapv1.VolumeSnapshot{Status: &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), RestoreSize: &size}}, "data"), volumeLook{size: 1024}, api.PhaseCompleted},
		{"a restored claim pending", claimLook(&corev1.PersistentVolumeClaim{}), running, api.PhaseRunning},
		{"a restored claim bound", claimLook(&corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: size}}}), volumeLook{size: 1024}, api.PhaseCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.look
			if tt.want.failed && tt.want.why.reason == "" {
				// An unreadable result: only its kind is stable.
				if !got.failed || got.why.reason != ReasonMoverFailed {
					t.Errorf("got %+v, want a failure of the mover", got)
				}
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			v := api.VolumeResult{Phase: api.PhasePending}
			recordVolume(&v, got, 1500*time.Millisecond)
			if v.Phase != tt.phase {
				t.Errorf("recorded phase %s, want %s", v.Phase, tt.phase)
			}
			if tt.phase == api.PhaseCompleted && (v.Size != tt.want.size || v.Duration != "1.5s") {
				t.Errorf("recorded %+v, want size %d in 1.5s", v, tt.want.size)
			}
		})
	}
}

// Each branch of a schedule's plan, from its Backups and the clock.
func TestPlanSchedule(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obj := &unstructured.Unstructured{}
	obj.SetName("nightly")
	obj.SetCreationTimestamp(metav1.NewTime(created))
	sched, err := parseCron("0 * * * *") // hourly
	if err != nil {
		t.Fatal(err)
	}
	backup := func(tick time.Time, phase api.Phase) scheduled {
		b := &unstructured.Unstructured{}
		b.SetName(scheduledName("nightly", tick))
		b.SetCreationTimestamp(metav1.NewTime(tick))
		return scheduled{obj: b, phase: phase, reason: "MoverFailed", message: "disk full"}
	}
	at := func(h int) time.Time { return created.Add(time.Duration(h) * time.Hour) }
	tests := []struct {
		name    string
		spec    api.ScheduleSpec
		mine    []scheduled
		running string
		now     time.Time
		// want: the reason, whether a Backup is created, how many are
		// pruned, the events' reasons and when to look again.
		reason  string
		create  bool
		pruned  int
		events  []string
		requeue time.Duration
	}{
		{name: "nothing due yet", now: at(0).Add(10 * time.Minute), reason: ReasonScheduled, requeue: 50 * time.Minute},
		{name: "a tick due: create", now: at(1).Add(time.Minute), reason: ReasonScheduled, create: true, events: []string{"BackupCreated"}, requeue: 59 * time.Minute},
		{name: "suspended", spec: api.ScheduleSpec{Suspend: true}, now: at(1).Add(time.Minute), reason: ReasonSuspended},
		{name: "missed its deadline", spec: api.ScheduleSpec{StartingDeadline: &metav1.Duration{Duration: time.Minute}}, now: at(1).Add(10 * time.Minute),
			reason: ReasonMissed, events: []string{ReasonMissed}, requeue: 50 * time.Minute},
		{name: "a backup of the source runs", running: "manual", now: at(1).Add(time.Minute), reason: ReasonBackupRunning, requeue: pollPeriod},
		{name: "the last backup failed", mine: []scheduled{backup(at(1), api.PhaseFailed)}, now: at(1).Add(time.Minute), reason: ReasonLastBackupFailed, requeue: 59 * time.Minute},
		{name: "beyond keep: pruned, oldest first", spec: api.ScheduleSpec{Keep: ptr.To[int32](1), Suspend: true},
			mine: []scheduled{backup(at(1), api.PhaseCompleted), backup(at(2), api.PhaseCompleted), backup(at(3), api.PhaseRunning)}, now: at(3).Add(time.Minute),
			reason: ReasonSuspended, pruned: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planSchedule(scheduleSeen{obj: obj, spec: tt.spec, sched: sched, mine: tt.mine, running: tt.running, now: tt.now}, api.ScheduleStatus{})
			var events []string
			for _, e := range p.events {
				events = append(events, e.reason)
			}
			if p.status.Reason != tt.reason || !p.due.IsZero() != tt.create || len(p.prune) != tt.pruned || !reflect.DeepEqual(events, tt.events) || p.requeue != tt.requeue {
				t.Errorf("got reason %s (%s), create %v, pruned %d, events %v, requeue %s\nwant %s, %v, %d, %v, %s",
					p.status.Reason, p.status.Message, !p.due.IsZero(), len(p.prune), events, p.requeue, tt.reason, tt.create, tt.pruned, tt.events, tt.requeue)
			}
		})
	}
}

// An invalid name or cron expression is refused before anything is read.
func TestCheckSchedule(t *testing.T) {
	for _, tt := range []struct{ name, cron, reason string }{
		{"nightly", "0 3 * * *", ""},
		{"nightly", "every day", ReasonInvalidSchedule},
		{"a name that is not a label value!", "0 3 * * *", ReasonInvalidSpec},
	} {
		_, bad := checkSchedule(tt.name, api.ScheduleSpec{Schedule: tt.cron})
		if got := ""; bad != nil {
			got = bad.reason
			if got != tt.reason {
				t.Errorf("checkSchedule(%q, %q) = %s, want %q", tt.name, tt.cron, got, tt.reason)
			}
		} else if tt.reason != "" {
			t.Errorf("checkSchedule(%q, %q) passed, want %s", tt.name, tt.cron, tt.reason)
		}
	}
}
