package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// MoverBinary is the runtime binary in the operator image, whose `mover`
// command the mover pods run.
const MoverBinary = "/usr/local/bin/chartpilot-operator"

// DefaultMoverUser runs a mover whose operand pod names no user: the
// operator image's own non-root user.
const DefaultMoverUser = 65532

// Mount points inside a mover pod.
const (
	sourceMount  = "/source"
	archiveMount = "/archive"
)

// shorten makes a deterministic object name from a base and parts: the
// base cut to fit, then a hash of everything, so that names stay unique
// and a restarted operator finds the pods it created.
func shorten(base, kind, part string) string {
	sum := sha256.Sum256([]byte(base + "\x00" + kind + "\x00" + part))
	suffix := "-" + kind
	if part != "" {
		suffix += "-" + hex.EncodeToString(sum[:])[:8]
	}
	if max := 63 - len(suffix); len(base) > max {
		base = base[:max-9] + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return base + suffix
}

// archiveName is the file of a claim's archive, relative to the target:
// <path>/<namespace>/<backup>/<claim>.tar.gz.
func archiveName(targetPath, namespace, backup, claim string) string {
	return path.Join("/", targetPath, namespace, backup, claim+".tar.gz")
}

// moverSpec is what a mover pod does.
type moverSpec struct {
	name, namespace string
	image           string
	labels          map[string]string
	owner           metav1.OwnerReference
	// args follow `chartpilot-operator mover`.
	args []string
	// source is mounted at /source, archive (unless "") at /archive.
	source, archive     string
	sourceRO, archiveRO bool
	security            *corev1.PodSecurityContext
	// s3Secret, for an S3 target, is the credentials Secret of the pod's
	// namespace: its keys become the mover's environment.
	s3Secret string
	// env is more of the mover's environment.
	env []corev1.EnvVar
}

// moverPod is a pod that runs once: non-root when the operand is, with a
// read-only root file system and no privileges, no API token.
func moverPod(s moverSpec) *corev1.Pod {
	uid := ptr.Deref(s.security.RunAsUser, 0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace, Labels: s.labels, OwnerReferences: []metav1.OwnerReference{s.owner}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              s.security,
			Containers: []corev1.Container{{
				Name:                     "mover",
				Image:                    s.image,
				Command:                  append([]string{MoverBinary, "mover"}, s.args...),
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(uid != 0),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts: mounts(s),
				Env:          append(s3Env(s.s3Secret), s.env...),
			}},
			Volumes: volumes(s),
		},
	}
}

func s3Env(secret string) []corev1.EnvVar {
	if secret == "" {
		return nil
	}
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: S3AccessKeyEnv, ValueFrom: ref(api.S3AccessKeyIDKey)},
		{Name: S3SecretKeyEnv, ValueFrom: ref(api.S3SecretAccessKeyKey)},
	}
}

// archiveLocation is where a claim's archive is on a target: the path
// inside the mounted target claim, or the object key with the flags that
// name the store.
func archiveLocation(t api.Target, namespace, backup, claim string) (where string, flags []string) {
	if s := t.S3; s != nil {
		flags = []string{"--s3-endpoint", s.Endpoint, "--s3-bucket", s.Bucket}
		if s.Region != "" {
			flags = append(flags, "--s3-region", s.Region)
		}
		if s.Insecure {
			flags = append(flags, "--s3-insecure")
		}
		return path.Join(s.Prefix, namespace, backup, claim+".tar.gz"), flags
	}
	return archiveMount + archiveName(t.PVC.Path, namespace, backup, claim), nil
}

// targetClaim is the claim a target mounts, "" for S3.
func targetClaim(t api.Target) string {
	if t.PVC != nil {
		return t.PVC.ClaimName
	}
	return ""
}

func mounts(s moverSpec) []corev1.VolumeMount {
	out := []corev1.VolumeMount{{Name: "source", MountPath: sourceMount, ReadOnly: s.sourceRO}}
	if s.archive != "" {
		out = append(out, corev1.VolumeMount{Name: "archive", MountPath: archiveMount, ReadOnly: s.archiveRO})
	}
	return out
}

func volumes(s moverSpec) []corev1.Volume {
	out := []corev1.Volume{{Name: "source", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.source, ReadOnly: s.sourceRO}}}}
	if s.archive != "" {
		out = append(out, corev1.Volume{Name: "archive", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.archive, ReadOnly: s.archiveRO}}})
	}
	return out
}

// ProbePod is a pod of the mover image that writes text into a file of a
// claim (write) or checks that the file holds it, as the claim's own pods'
// user: how a test marks a volume and finds the mark after a restore.
func ProbePod(namespace, name, image, claim, file, text string, write bool, sec *corev1.PodSecurityContext) *corev1.Pod {
	cmd := "probe-check"
	if write {
		cmd = "probe-write"
	}
	p := moverPod(moverSpec{
		name: name, namespace: namespace, image: image, labels: map[string]string{moverLabel: "probe"},
		args: []string{cmd, "--from", text, "--to", path.Join(sourceMount, file)}, source: claim, sourceRO: !write,
		security: sec,
	})
	p.OwnerReferences = nil
	return p
}

// MoverResult is the result a finished mover or probe pod reports, or why
// it failed; done is false while it runs.
func MoverResult(p *corev1.Pod) (res mover.Result, done bool, err error) {
	ps := moverState(p)
	if !ps.done {
		return res, false, nil
	}
	if ps.failed {
		return res, true, errors.New(moverMessage(ps.message))
	}
	res, err = mover.ParseResult(ps.message)
	return res, true, err
}

// OperandSecurity is the user, group and fsGroup of the pods that mount a
// claim, so that a mover reads (and writes back) their files as they do;
// DefaultMoverUser when none says.
func OperandSecurity(ctx context.Context, r client.Reader, namespace, claim string) (*corev1.PodSecurityContext, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", namespace, err)
	}
	sc := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for _, p := range pods.Items {
		if p.Labels[moverLabel] != "" || !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
		}) {
			continue
		}
		if psc := p.Spec.SecurityContext; psc != nil {
			sc.RunAsUser, sc.RunAsGroup, sc.FSGroup = psc.RunAsUser, psc.RunAsGroup, psc.FSGroup
		}
		for _, c := range p.Spec.Containers {
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				sc.RunAsUser = c.SecurityContext.RunAsUser
				if c.SecurityContext.RunAsGroup != nil {
					sc.RunAsGroup = c.SecurityContext.RunAsGroup
				}
				break
			}
		}
		break
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = ptr.To[int64](DefaultMoverUser)
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = sc.RunAsUser
	}
	return sc, nil
}

// moverLabel marks mover pods: they are not the operand.
const moverLabel = "backup.chartpilot.io/mover"

// podResult is how a mover pod ended.
type podResult struct {
	done, failed bool
	message      string
}

func moverState(p *corev1.Pod) podResult {
	var msg string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg = t.Message
			if msg == "" {
				msg = fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
			}
		}
		if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "CreateContainerConfigError" || w.Reason == "CreateContainerError") {
			return podResult{done: true, failed: true, message: fmt.Sprintf("%s: %s", w.Reason, w.Message)}
		}
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return podResult{done: true, message: msg}
	case corev1.PodFailed:
		if msg == "" {
			msg = p.Status.Message
		}
		return podResult{done: true, failed: true, message: msg}
	}
	return podResult{}
}
