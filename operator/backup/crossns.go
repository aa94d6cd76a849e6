package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// A restore into another namespace from a claim target: pods of the
// target namespace cannot mount the claim holding the archives, so a
// serving mover pod of the backup's namespace mounts it read-only and
// serves the one archive of a claim once, on its pod IP, to the
// restoring mover of the target namespace. Both read a random token from
// a Secret of their namespace; it is never in a pod's spec, a status, an
// event or a log. The volume's data goes pod to pod: the operator never
// holds it, and a restarted operator finds both pods again by name.

// ArchiveTokenEnv carries the token of a served archive into the serving
// and the fetching mover pods (from a Secret, secretKeyRef).
const ArchiveTokenEnv = "CHARTPILOT_ARCHIVE_TOKEN"

const (
	// tokenKey is the key of the token in its Secrets.
	tokenKey = "token"
	// servePort is where a serving mover listens on its pod's IP.
	servePort = 8080
	// serveTimeout ends a serving mover nobody fetched from (an operator
	// gone, a fetcher that cannot start): it never runs on.
	serveTimeout = "10m"
	// moverServe is the moverLabel value of serving pods.
	moverServe = "serve"
	// podIPEnv is the serving pod's IP, from the downward API.
	podIPEnv = "POD_IP"
)

// served tells whether the restore's volumes come through serving pods.
func (run *restoreRun) served() bool {
	return run.backup.Target.PVC != nil && run.ns != run.obj.GetNamespace()
}

// tokenSecret is the name of the token's Secret, in both namespaces.
func (run *restoreRun) tokenSecret() string { return shorten(run.obj.GetName(), "token", "") }

// servePodName is the serving pod of a claim's archive.
func (run *restoreRun) servePodName(claim string) string {
	return shorten(run.obj.GetName(), moverServe, claim)
}

// ensureToken creates the token's Secret in the backup's namespace (owned
// by the Restore) and its copy in the target namespace; an operator
// restarted half way keeps the token it made first.
func (r *RestoreReconciler) ensureToken(ctx context.Context, run *restoreRun) error {
	labels := map[string]string{api.RestoreLabel: run.obj.GetName(), moverLabel: moverServe}
	home := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: run.tokenSecret(), Namespace: run.obj.GetNamespace(), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef(run.obj)}},
		Data: map[string][]byte{tokenKey: []byte(rand.Text())},
	}
	err := r.opts.Client.Create(ctx, home)
	if apierrors.IsAlreadyExists(err) {
		err = r.opts.Reader.Get(ctx, client.ObjectKeyFromObject(home), home)
	}
	if err != nil {
		return fmt.Errorf("creating the token Secret %s/%s: %w", home.Namespace, home.Name, err)
	}
	away := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: run.tokenSecret(), Namespace: run.ns, Labels: labels},
		Data:       map[string][]byte{tokenKey: home.Data[tokenKey]},
	}
	if err := r.opts.Client.Create(ctx, away); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the token Secret %s/%s: %w", away.Namespace, away.Name, err)
	}
	return nil
}

// tokenEnv gives a mover the token from the Secret of its namespace.
func tokenEnv(secret string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: ArchiveTokenEnv, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: tokenKey}}}}
}

// servePod serves a claim's archive from the target claim, read-only.
func (run *restoreRun) servePod(image, claim string) *corev1.Pod {
	t := run.backup.Target.PVC
	file := path.Join(sourceMount, archiveName(t.Path, run.obj.GetNamespace(), run.spec.BackupName, claim))
	env := append(tokenEnv(run.tokenSecret()), corev1.EnvVar{Name: podIPEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	pod := moverPod(moverSpec{
		name: run.servePodName(claim), namespace: run.obj.GetNamespace(), image: image,
		labels: map[string]string{api.RestoreLabel: run.obj.GetName(), api.ClaimLabel: claim, moverLabel: moverServe},
		owner:  ownerRef(run.obj),
		// $(POD_IP) is expanded by the kubelet: the pod's own address only.
		args:   []string{"serve", "--from", file, "--listen", "$(" + podIPEnv + "):" + strconv.Itoa(servePort), "--serve-timeout", serveTimeout},
		source: t.ClaimName, sourceRO: true, security: run.contents.security(claim), env: env,
	})
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "archive", ContainerPort: servePort, Protocol: corev1.ProtocolTCP}}
	return pod
}

// serveURL is where a claim's archive is served, creating its serving pod
// when missing; "" while the pod has no address yet.
func (r *RestoreReconciler) serveURL(ctx context.Context, run *restoreRun, image, claim string) (string, error) {
	if err := r.ensureToken(ctx, run); err != nil {
		return "", err
	}
	pod := &corev1.Pod{}
	err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.obj.GetNamespace(), Name: run.servePodName(claim)}, pod)
	if apierrors.IsNotFound(err) {
		pod = run.servePod(image, claim)
		if err := r.opts.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating pod %s to serve the archive of claim %s: %w", pod.Name, claim, err)
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading pod %s serving the archive of claim %s: %w", run.servePodName(claim), claim, err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return "", nil
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(servePort)) + "/", nil
}

// serverFailed says why a serving pod of a volume not yet refilled failed;
// "" when none did.
func (r *RestoreReconciler) serverFailed(ctx context.Context, run *restoreRun) (string, error) {
	for i, c := range run.contents.Claims {
		if i < len(run.st.Volumes) && run.st.Volumes[i].Phase == api.PhaseCompleted {
			continue
		}
		pod, err := r.opts.getPod(ctx, run.obj.GetNamespace(), run.servePodName(c.Name))
		if err != nil {
			return "", err
		}
		if pod == nil {
			continue
		}
		if ps := moverState(pod); ps.done && ps.failed {
			return fmt.Sprintf("serving the archive of claim %s to namespace %s (pod %s) failed: %s", c.Name, run.ns, pod.Name, moverMessage(ps.message)), nil
		}
	}
	return "", nil
}

// cleanup deletes, once a restore ended either way, what it made only to
// move data: the serving pods, the token Secrets, the copy of S3
// credentials and the movers of another namespace (which no owner
// collects); of a completed one, its movers too (a failed one's stay to
// be read). In another namespace, only when the restore was let in there
// at least once. A failure is logged: the owned ones go with the Restore.
func (r *RestoreReconciler) cleanup(ctx context.Context, run *restoreRun) {
	home, name := run.obj.GetNamespace(), run.obj.GetName()
	away := run.spec.TargetNamespace
	log := func(err error, what string) {
		if err != nil && !apierrors.IsNotFound(err) {
			r.opts.Log.Error(err, "cleaning up after a restore", "restore", home+"/"+name, "object", what)
		}
	}
	if run.st.Phase == api.PhaseCompleted {
		r.opts.deleteMoversOf(ctx, run.ns, api.RestoreLabel, name)
	}
	log(r.opts.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(home), client.MatchingLabels{api.RestoreLabel: name, moverLabel: moverServe}), "serving pods")
	token := run.tokenSecret()
	log(r.opts.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: token}}), "Secret "+token)
	if away == "" || away == home {
		return
	}
	// A restore refused before it started wrote nothing there, and deleting
	// by names its author chose would be a write without the grant.
	if run.st.Reason == ReasonTargetNotGranted && run.st.StartTime == nil {
		return
	}
	log(r.opts.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: away, Name: token}}), "Secret "+away+"/"+token)
	creds := shorten(name, "s3", "")
	log(r.opts.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: away, Name: creds}}), "Secret "+away+"/"+creds)
	log(r.opts.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(away), client.MatchingLabels{api.RestoreLabel: name, moverLabel: "restore"}), "mover pods of "+away)
}
