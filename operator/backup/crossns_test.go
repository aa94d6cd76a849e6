package backup_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// podIn waits for the one pod of selector in namespace ns.
func (w *world) podIn(ns, selector string) corev1.Pod {
	w.t.Helper()
	var pods *corev1.PodList
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = w.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(pods.Items) == 1, nil
	})
	if err != nil {
		w.t.Fatalf("no pod %s in namespace %s", selector, ns)
	}
	return pods.Items[0]
}

// setPodStatus plays the kubelet: the pod runs at ip, or ends with res.
func (w *world) setPodStatus(old corev1.Pod, ip string, res *mover.Result) {
	w.t.Helper()
	p, err := w.cs.CoreV1().Pods(old.Namespace).Get(w.ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
	if res != nil {
		msg, _ := json.Marshal(res)
		code := int32(0)
		p.Status.Phase = corev1.PodSucceeded
		if res.Error != "" {
			p.Status.Phase, code = corev1.PodFailed, 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mover", Image: moverImage, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: string(msg)}}}}
	}
	if _, err := w.cs.CoreV1().Pods(p.Namespace).UpdateStatus(w.ctx, p, metav1.UpdateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// bindIn marks a claim of namespace ns Bound.
func (w *world) bindIn(ns, claim string) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := w.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pvc.Status.Phase = corev1.ClaimBound
		_, err = w.cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		w.t.Fatalf("binding claim %s/%s: %v", ns, claim, err)
	}
}

// noneLeftIn waits until no pod or Secret of selector is left in ns (a
// backup or restore cleans up once its status says it ended) and returns
// how many are left.
func (w *world) noneLeftIn(ns, selector string) int {
	w.t.Helper()
	n := 0
	_ = wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		n = w.leftIn(ns, selector)
		return n == 0, nil
	})
	return n
}

// leftIn counts the pods and Secrets of selector left in namespace ns.
func (w *world) leftIn(ns, selector string) int {
	w.t.Helper()
	pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		w.t.Fatal(err)
	}
	secrets, err := w.cs.CoreV1().Secrets(ns).List(w.ctx, metav1.ListOptions{LabelSelector: selector + "," + "backup.chartpilot.io/mover"})
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n + len(secrets.Items)
}

// A restore from a claim target into another namespace under another
// name: a serving pod of the backup's namespace mounts the target claim
// read-only and serves the archive on its pod IP; the restoring mover of
// the other namespace fetches it, both with a token from a Secret of their
// namespace that no pod spec, status or event shows. Once restored, the
// serving pod and the tokens are gone. A serving pod that fails fails the
// restore, naming it, and is cleaned up the same way.
func TestRestoreFromClaimIntoAnotherNamespace(t *testing.T) {
	w := newWorldIn(t, 1)
	other := w.others[0]
	w.completedBackup()
	w.grant(other)
	w.create(restoreGVK, "away", map[string]any{"backupName": "nightly", "targetNamespace": other, "targetName": "copy"})

	serve := w.podIn(w.ns, api.RestoreLabel+"=away,backup.chartpilot.io/mover=serve")
	c := serve.Spec.Containers[0]
	want := []string{backup.MoverBinary, "mover", "serve", "--from", "/source/backups/" + w.ns + "/nightly/shop-data.tar.gz", "--listen", "$(POD_IP):8080", "--serve-timeout", "10m"}
	if strings.Join(c.Command, " ") != strings.Join(want, " ") {
		t.Errorf("serving pod runs %q, want %q", c.Command, want)
	}
	if v := serve.Spec.Volumes[0].PersistentVolumeClaim; v.ClaimName != "backups" || !v.ReadOnly || len(serve.Spec.Volumes) != 1 {
		t.Errorf("serving pod mounts %+v, want the target claim backups read-only", serve.Spec.Volumes)
	}
	token := w.token(w.ns, other)
	spec, _ := json.Marshal(serve.Spec)
	if !strings.Contains(string(spec), backup.ArchiveTokenEnv) || strings.Contains(string(spec), token) {
		t.Errorf("the serving pod does not read the token from its Secret: %s", spec)
	}
	if n := w.leftIn(other, api.RestoreLabel+"=away,backup.chartpilot.io/mover=restore"); n != 0 {
		t.Errorf("a restoring mover started before the serving pod has an address")
	}

	w.setPodStatus(serve, "10.88.0.7", nil)
	fetch := w.podIn(other, api.RestoreLabel+"=away,backup.chartpilot.io/mover=restore")
	c = fetch.Spec.Containers[0]
	want = []string{backup.MoverBinary, "mover", "restore", "--from", "http://10.88.0.7:8080/", "--to", "/source"}
	if strings.Join(c.Command, " ") != strings.Join(want, " ") {
		t.Errorf("restoring mover runs %q, want %q", c.Command, want)
	}
	if len(fetch.Spec.Volumes) != 1 || fetch.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "copy-data" {
		t.Errorf("restoring mover mounts %+v, want claim copy-data only", fetch.Spec.Volumes)
	}
	if spec, _ := json.Marshal(fetch.Spec); strings.Contains(string(spec), token) {
		t.Error("the token is in the restoring mover's spec")
	}
	w.setPodStatus(fetch, "10.88.0.8", &mover.Result{Size: 4096, Files: 1})
	w.setPodStatus(serve, "10.88.0.7", &mover.Result{Size: 4096, Files: 1})
	w.bindIn(other, "copy-data")
	st := w.status(restoreGVK, "away", phaseIs(api.PhaseCompleted))
	if st["restored"] != other+"/copy" {
		t.Errorf("status.restored = %v", st["restored"])
	}
	w.noTokenShown(token)
	for _, ns := range []string{w.ns, other} {
		if n := w.noneLeftIn(ns, api.RestoreLabel+"=away"); n != 0 {
			t.Errorf("%d serving pod(s), mover(s) or token Secret(s) left in %s", n, ns)
		}
	}

	// A serving pod that cannot run fails the restore and is cleaned up.
	w.create(restoreGVK, "broken", map[string]any{"backupName": "nightly", "targetNamespace": other, "targetName": "copy2"})
	serve = w.podIn(w.ns, api.RestoreLabel+"=broken,backup.chartpilot.io/mover=serve")
	w.setPodStatus(serve, "10.88.0.9", &mover.Result{Error: "open /source/backups/x: no such file or directory"})
	st = w.status(restoreGVK, "broken", failedWith(backup.ReasonMoverFailed))
	if msg, _ := st["message"].(string); !strings.Contains(msg, serve.Name) || !strings.Contains(msg, "no such file") {
		t.Errorf("failed restore: %v", msg)
	}
	for _, ns := range []string{w.ns, other} {
		if n := w.noneLeftIn(ns, api.RestoreLabel+"=broken"); n != 0 {
			t.Errorf("%d serving pod(s), mover(s) or token Secret(s) left in %s after a failure", n, ns)
		}
	}
}

// token returns the token of the restore "away", the same in both
// namespaces.
func (w *world) token(home, away string) string {
	w.t.Helper()
	var tokens []string
	for _, ns := range []string{home, away} {
		err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := w.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: api.RestoreLabel + "=away,backup.chartpilot.io/mover=serve"})
			if err != nil || len(list.Items) != 1 {
				return false, nil
			}
			tokens = append(tokens, string(list.Items[0].Data["token"]))
			return true, nil
		})
		if err != nil {
			w.t.Fatalf("no token Secret in %s", ns)
		}
	}
	if tokens[0] == "" || tokens[0] != tokens[1] {
		w.t.Fatalf("tokens %q differ or are empty", tokens)
	}
	return tokens[0]
}

// noTokenShown fails when the token is in a status or an event.
func (w *world) noTokenShown(token string) {
	w.t.Helper()
	u, err := w.res(restoreGVK).Get(w.ctx, "away", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	data, _ := json.Marshal(u.Object["status"])
	for _, ns := range append([]string{w.ns}, w.others...) {
		events, _ := w.cs.CoreV1().Events(ns).List(w.ctx, metav1.ListOptions{})
		for _, e := range events.Items {
			data = append(data, e.Message...)
		}
	}
	if strings.Contains(string(data), token) {
		w.t.Error("the token is shown in a status or an event")
	}
}
