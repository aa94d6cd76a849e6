package realnode

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// scheduleEvery is the schedules' period: long enough for a backup of a
// small volume to end before the next tick.
const scheduleEvery = 20 * time.Second

// A schedule on the real node makes two backups through mover pods, and
// once suspended, retention (keep 1) still deletes the first with its
// archive: a file of the target claim, then objects of the cluster's S3
// store. Logs the jitter from each tick to its Backup and how long
// retention took.
func TestScheduleOnRealNode(t *testing.T) {
	c := realCluster(t)
	bundleDir, image := project(t, c)
	projectDir := filepath.Dir(bundleDir)
	ctx := t.Context()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	sideBySide(t, projectDir, cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	const ns = "sched"
	// Cleanup, not defer: the operator serves the parallel subtests,
	// which run after this function returns.
	t.Cleanup(startOperator(t, cfg, projectDir, image, ns))
	backups := dyn.Resource(api.BackupResource(vaultGVK)).Namespace(ns)
	schedules := dyn.Resource(api.ScheduleResource(vaultGVK)).Namespace(ns)
	vaults := dyn.Resource(vaultGVK.GroupVersion().WithResource(api.Plural(vaultGVK.Kind))).Namespace(ns)
	create := func(ri dynamic.ResourceInterface, kind, name string, spec map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(vaultGVK.GroupVersion().String())
		u.SetKind(kind)
		u.SetName(name)
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", kind, name, err)
		}
	}
	operand := images.Repository(c.RegistryAddr(), images.HelloServer)
	create(vaults, vaultGVK.Kind, "small", map[string]any{"size": "64Mi", "image": map[string]any{"repository": operand, "tag": "local"}})
	waitCR(t, vaults, "small")
	target := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backups"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store, mc := s3Bucket(ctx, t, c, cs, ns, "scheduled")

	for _, tc := range []struct {
		name   string
		target map[string]any
		// archives lists the archive files (claim) or objects (S3) of a
		// backup.
		archives func(backup string) []string
	}{
		{
			name:   "claim",
			target: map[string]any{"pvc": map[string]any{"claimName": "backups", "path": "scheduled"}},
			archives: func(backup string) []string {
				files, _ := filepath.Glob(filepath.Join(volumeDir(t, cs, ns, "backups"), "scheduled", ns, backup, "*"))
				return files
			},
		},
		{
			name: "s3",
			target: map[string]any{"s3": map[string]any{"endpoint": store.PodEndpoint, "bucket": "scheduled", "prefix": "nightly",
				"region": store.Region, "insecure": true, "credentialsSecret": "s3"}},
			archives: func(backup string) []string {
				var keys []string
				for o := range mc.ListObjects(ctx, "scheduled", minio.ListObjectsOptions{Prefix: "nightly/" + ns + "/" + backup + "/", Recursive: true}) {
					if o.Err == nil {
						keys = append(keys, o.Key)
					}
				}
				return keys
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The two schedules tick side by side: each subtest waits
			// out two periods.
			t.Parallel()
			// Backups arrive through a watch: the time each is seen,
			// against its tick (in its name), is the schedule's jitter.
			seen := watchCreated(t, backups, "to-"+tc.name)
			create(schedules, api.ScheduleKind(vaultGVK).Kind, "to-"+tc.name, map[string]any{
				"schedule": "@every " + scheduleEvery.String(), "keep": 1,
				"template": map[string]any{"source": "small", "target": tc.target},
			})
			defer func() {
				_ = schedules.Delete(context.Background(), "to-"+tc.name, metav1.DeleteOptions{})
			}()
			first, second := seen.next(t, schedules), seen.next(t, schedules)
			// No third run: its retention would take the second's
			// archives if it ended before they are counted, as it can
			// on a loaded machine.
			suspend := []byte(`{"spec":{"suspend":true}}`)
			if _, err := schedules.Patch(ctx, "to-"+tc.name, types.MergePatchType, suspend, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitDone(t, backups, first.name)
			if len(tc.archives(first.name)) == 0 {
				t.Fatalf("no archive of %s", first.name)
			}
			waitDone(t, backups, second.name)
			// Polled every 500 ms: the time is that close.
			seenDone := time.Now()
			gone(t, func() error { _, err := backups.Get(ctx, first.name, metav1.GetOptions{}); return err })
			took := time.Since(seenDone)
			if left := tc.archives(first.name); len(left) > 0 {
				t.Errorf("retention left the archives of %s: %v", first.name, left)
			}
			t.Logf("%s: jitter from tick to Backup %s, %s; retention deleted %s and its archives %s after %s was seen Completed",
				tc.name, first.jitter.Round(time.Millisecond), second.jitter.Round(time.Millisecond), first.name, took.Round(100*time.Millisecond), second.name)
			if got := tc.archives(second.name); len(got) != 1 {
				t.Errorf("archives of %s: %v", second.name, got)
			}
		})
	}
}

// created is a Backup a schedule created, seen by the test's watch.
type created struct {
	name string
	// jitter is from its tick (in its name) to when the watch saw it.
	jitter time.Duration
}

type createdWatch struct {
	schedule string
	ch       chan created
}

// watchCreated reports the Backups of the schedule created from now on.
func watchCreated(t *testing.T, ri dynamic.ResourceInterface, schedule string) *createdWatch {
	t.Helper()
	w, err := ri.Watch(t.Context(), metav1.ListOptions{LabelSelector: api.ScheduleLabel + "=" + schedule})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	cw := &createdWatch{schedule: schedule, ch: make(chan created, 16)}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Added {
				continue
			}
			at := time.Now()
			sched := u.GetLabels()[api.ScheduleLabel]
			tick, err := time.Parse("20060102-150405", strings.TrimPrefix(u.GetName(), sched+"-"))
			if sched == "" || err != nil {
				continue
			}
			cw.ch <- created{name: u.GetName(), jitter: at.Sub(tick)}
		}
	}()
	return cw
}

// next waits for the next Backup of the schedule. It waits on the
// schedule's progress, not on a guess of how long the operator takes: until
// a period after the tick the operator last reported as next
// (status.nextScheduleTime), or, while it has reported none, for the
// operator to take the schedule up at all.
func (cw *createdWatch) next(t *testing.T, schedules dynamic.ResourceInterface) created {
	t.Helper()
	const takeUp = 5 * time.Minute
	deadline := time.Now().Add(takeUp)
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for {
		select {
		case c := <-cw.ch:
			return c
		case <-poll.C:
		}
		if next, ok := nextTick(t, schedules, cw.schedule); ok {
			deadline = next.Add(scheduleEvery)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backup of schedule %s by %s (a period after its next tick, or %s for the operator to take it up)",
				cw.schedule, deadline.Format(time.TimeOnly), takeUp)
			return created{}
		}
	}
}

// nextTick is the schedule's status.nextScheduleTime, if the operator has
// reported one.
func nextTick(t *testing.T, schedules dynamic.ResourceInterface, name string) (time.Time, bool) {
	t.Helper()
	u, err := schedules.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading schedule %s: %v", name, err)
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "nextScheduleTime")
	next, err := time.Parse(time.RFC3339, s)
	return next, err == nil
}
