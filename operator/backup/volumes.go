package backup

import (
	"context"
	"fmt"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// A backup or restore moves each volume's data by a mover pod, a
// VolumeSnapshot or a claim the provisioner fills from one. Observe reads
// each into a volumeLook (the look functions below are pure, given what was
// read); planVolumes decides from the looks; recordVolume writes them into
// the status.

// problem is a status reason and the message that goes with it.
type problem struct{ reason, message string }

// seen is what a backup's or restore's observe read, whatever the step.
// A look stops at the first finding that fails it (blocked): what comes
// later depends on what came before.
type seen struct {
	blocked *problem
	// image is the movers' image, read when a mover is to be made.
	image string
	// volumes are the looks at the volumes, in the order of the status
	// (zero for those Completed).
	volumes []volumeLook
	// hooks are the release's pods, read when hooks are to run.
	hooks []corev1.Pod
}

// needImage reads the movers' image when a look found a mover pod of vols
// missing.
func (o *Options) needImage(ctx context.Context, s *seen, vols []api.VolumeResult) {
	for i, l := range s.volumes {
		if l.missing && vols[i].Method != api.VolumeMethodSnapshot {
			var err error
			if s.image, err = o.moverImage(ctx); err != nil {
				s.blocked = &problem{ReasonNoMoverImage, err.Error()}
			}
			return
		}
	}
}

// volumeLook is what one look at the work on a volume found.
type volumeLook struct {
	// missing: not made yet (an operator restarted before it made it).
	missing bool
	// running: made, not done.
	running bool
	// failed ends the volume, and its backup or restore: message is the
	// volume's, why the whole's.
	failed  bool
	message string
	why     problem
	// size and files of a volume done.
	size, files int64
}

// done tells a look whose volume needs nothing more.
func (l volumeLook) done() bool { return !l.missing && !l.running && !l.failed }

// action is what a backup or restore does next.
type action int

const (
	// actFail: Failed, with plan.why.
	actFail action = iota + 1
	// actWait: a backup stays Pending while the release settles
	// (plan.why), and looks again after plan.requeue.
	actWait
	// actStart: from Pending to Running, writing what it starts with.
	actStart
	// actPoll: make the volumes' missing work (plan.create), look again.
	actPoll
	// actCreateCR: a restore's volumes are refilled; create the CR.
	actCreateCR
	// actFinish: the post hooks, then Completed.
	actFinish
)

// plan is what planBackup or planRestore decides.
type plan struct {
	action  action
	why     problem
	requeue time.Duration
	// create are the indexes of the volumes whose work is missing.
	create []int
}

// planVolumes decides from the looks at the volumes not Completed yet
// (the others' looks are zero): fail with the first failure in order, poll
// while any is not done, else then.
func planVolumes(looks []volumeLook, then action) plan {
	p := plan{action: then}
	for i, l := range looks {
		switch {
		case l.failed:
			return plan{action: actFail, why: l.why}
		case l.missing:
			p.action, p.create = actPoll, append(p.create, i)
		case l.running:
			p.action = actPoll
		}
	}
	return p
}

// recordVolume writes a look into the volume's result; took is the time
// since the backup or restore started.
func recordVolume(v *api.VolumeResult, l volumeLook, took time.Duration) {
	switch {
	case v.Phase == api.PhaseCompleted, l.missing:
	case l.failed:
		v.Phase, v.Message = api.PhaseFailed, l.message
	case l.running:
		v.Phase = api.PhaseRunning
	default:
		v.Phase, v.Size, v.Files, v.Message = api.PhaseCompleted, l.size, l.files, ""
		v.Duration = took.Round(100 * time.Millisecond).String()
	}
}

// moverLook is what a mover pod (nil: none) says; what names its work in
// a failure ("copying claim data").
func moverLook(pod *corev1.Pod, name, what string) volumeLook {
	if pod == nil {
		return volumeLook{missing: true}
	}
	ps := moverState(pod)
	switch {
	case !ps.done:
		return volumeLook{running: true}
	case ps.failed:
		msg := moverMessage(ps.message)
		return volumeLook{failed: true, message: msg, why: problem{ReasonMoverFailed, fmt.Sprintf("%s (pod %s) failed: %s", what, name, msg)}}
	}
	res, err := mover.ParseResult(ps.message)
	if err != nil {
		return volumeLook{failed: true, message: err.Error(), why: problem{ReasonMoverFailed, fmt.Sprintf("%s (pod %s): %v", what, name, err)}}
	}
	return volumeLook{size: res.Size, files: res.Files}
}

// snapshotLook is what a backup's VolumeSnapshot (nil: none) of claim says.
func snapshotLook(vs *snapv1.VolumeSnapshot, claim string) volumeLook {
	switch {
	case vs == nil:
		return volumeLook{missing: true}
	case vs.Status != nil && vs.Status.Error != nil && vs.Status.Error.Message != nil:
		msg := *vs.Status.Error.Message
		return volumeLook{failed: true, message: msg, why: problem{ReasonSnapshotFailed, fmt.Sprintf("VolumeSnapshot %s of claim %s: %s", vs.Name, claim, msg)}}
	case vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false):
		return volumeLook{running: true}
	}
	var l volumeLook
	if vs.Status.RestoreSize != nil {
		l.size = vs.Status.RestoreSize.Value()
	}
	return l
}

// claimLook is what a claim a restore made from a snapshot says: done
// once bound (the provisioner filled it).
func claimLook(pvc *corev1.PersistentVolumeClaim) volumeLook {
	if pvc.Status.Phase != corev1.ClaimBound {
		return volumeLook{running: true}
	}
	var l volumeLook
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		l.size = q.Value()
	}
	return l
}

// getPod reads a pod; nil when there is none.
func (o *Options) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading mover pod %s: %w", name, err)
	}
	return pod, nil
}

// lookMover reads a mover pod and says what it found.
func (o *Options) lookMover(ctx context.Context, ns, name, what string) (volumeLook, error) {
	pod, err := o.getPod(ctx, ns, name)
	if err != nil {
		return volumeLook{}, err
	}
	return moverLook(pod, name, what), nil
}
