package backup_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

var restConfig *rest.Config

var storeGVK = schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "Store"}

const moverImage = "registry.invalid/chartpilot-operator:test"

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("testdata", "crd.yaml")}, CRDs: api.CRDs(storeGVK)}
	flag.Parse() // for testing.Short: the fast tier builds nothing
	if !testing.Short() {
		snapshotCRDs, err := clustertest.SnapshotCRDs(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, snapshotCRDs)
	}
	os.Exit(clustertest.MainAPIServer(m, env, &restConfig))
}

// world is one test's namespace on the shared API server, with an
// operator for the Store kind.
type world struct {
	t   *testing.T
	ctx context.Context
	ns  string
	cs  kubernetes.Interface
	dyn dynamic.Interface
	// stop stops the operator.
	stop func()

	// others are more namespaces the operator watches.
	others []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldIn(t, 0)
}

// newWorldIn is newWorld with more namespaces watched by the operator.
func newWorldIn(t *testing.T, others int) *world {
	t.Helper()
	clustertest.SkipIfShort(t)
	w := &world{t: t, ctx: t.Context(), cs: kubernetes.NewForConfigOrDie(restConfig), dyn: dynamic.NewForConfigOrDie(restConfig)}
	ns, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "backup-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.ns = ns.Name
	for range others {
		o, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "backup-other-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.others = append(w.others, o.Name)
	}
	w.stop = w.startOperator()
	return w
}

// startOperator runs the operator for this world's namespace until the
// test ends; the returned func stops it earlier.
func (w *world) startOperator() (stop func()) {
	w.t.Helper()
	path := filepath.Join("testdata", "charts", "store")
	ch, err := loader.Load(path)
	if err != nil {
		w.t.Fatal(err)
	}
	watch := watches.Watch{Group: storeGVK.Group, Version: storeGVK.Version, Kind: storeGVK.Kind, Chart: path,
		LoadedChart: ch, LabelSelector: labels.Everything(), DryRunOption: watches.DryRunClient}
	mgr, err := operator.New(operator.Options{
		Watches: []watches.Watch{watch}, Config: restConfig, Namespaces: append([]string{w.ns}, w.others...),
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", Log: testLog(w.t),
		SkipNameValidation: true, MoverImage: moverImage,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("operator: %v", err)
		}
	}
	w.t.Cleanup(stop)
	return stop
}

// testLog logs the operator's errors into the test's log.
func testLog(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 0})
}

func (w *world) res(gvk schema.GroupVersionKind) dynamic.ResourceInterface {
	return w.dyn.Resource(gvk.GroupVersion().WithResource(api.Plural(gvk.Kind))).Namespace(w.ns)
}

func (w *world) create(gvk schema.GroupVersionKind, name string, spec map[string]any) {
	w.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	if _, err := w.res(gvk).Create(w.ctx, u, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("creating %s %s: %v", gvk.Kind, name, err)
	}
}

// store creates a Store and waits until its release is deployed, its
// claim bound (what the PV controller would do) and the CR Ready.
func (w *world) store(name string, spec map[string]any) {
	w.t.Helper()
	w.create(storeGVK, name, spec)
	w.waitCR(name, reconciler.TypeDeployed)
	w.bind(name + "-data")
	w.waitCR(name, reconciler.TypeReady)
}

func (w *world) waitCR(name, condition string) {
	w.t.Helper()
	var last []metav1.Condition
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := w.res(storeGVK).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var st reconciler.Status
		m, _ := u.Object["status"].(map[string]any)
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		last = st.Conditions
		return meta.IsStatusConditionTrue(st.Conditions, condition), nil
	})
	if err != nil {
		w.t.Fatalf("Store %s not %s: %+v", name, condition, last)
	}
}

// bind marks a claim Bound, as the PV controller would.
func (w *world) bind(claim string) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pvc.Status.Phase = corev1.ClaimBound
		_, err = w.cs.CoreV1().PersistentVolumeClaims(w.ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		w.t.Fatalf("binding claim %s: %v", claim, err)
	}
}

// claim creates a bound claim (the backup target).
func (w *world) claim(name string) {
	w.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if _, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Create(w.ctx, pvc, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.bind(name)
}

// status waits until the backup or restore's status satisfies ok.
func (w *world) status(gvk schema.GroupVersionKind, name string, ok func(phase api.Phase, reason string) bool) map[string]any {
	w.t.Helper()
	var st map[string]any
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := w.res(gvk).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, _ = u.Object["status"].(map[string]any)
		phase, _ := st["phase"].(string)
		reason, _ := st["reason"].(string)
		return ok(api.Phase(phase), reason), nil
	})
	if err != nil {
		w.t.Fatalf("%s %s: status %v", gvk.Kind, name, st)
	}
	return st
}

func phaseIs(want api.Phase) func(api.Phase, string) bool {
	return func(p api.Phase, _ string) bool { return p == want }
}

func failedWith(reason string) func(api.Phase, string) bool {
	return func(p api.Phase, r string) bool { return p == api.PhaseFailed && r == reason }
}

// kubelet ends the mover pods of selector still to run as the kubelet
// would: Succeeded with the mover's result, or Failed with its error, as
// termination message.
func (w *world) kubelet(selector string, res mover.Result) []corev1.Pod {
	w.t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := w.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		pods = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !toRun(p) })
		return len(pods) > 0, nil
	})
	if err != nil {
		w.t.Fatalf("no mover pod %s to run", selector)
	}
	msg, _ := json.Marshal(res)
	for i := range pods {
		p := &pods[i]
		p.Status.Phase = corev1.PodSucceeded
		code := int32(0)
		if res.Error != "" {
			p.Status.Phase, code = corev1.PodFailed, 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mover", Image: moverImage, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: string(msg)},
		}}}
		if _, err := w.cs.CoreV1().Pods(w.ns).UpdateStatus(w.ctx, p, metav1.UpdateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
	return pods
}

// toRun tells a pod the kubelet would still run: one that has not ended
// and is not being deleted, unlike an earlier mover of the same CR that
// the operator may delete at any moment.
func toRun(p corev1.Pod) bool {
	ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	return !ended && p.DeletionTimestamp == nil
}

func (w *world) exists(obj string, get func() error) bool {
	err := get()
	if err != nil && !apierrors.IsNotFound(err) {
		w.t.Fatalf("%s: %v", obj, err)
	}
	return err == nil
}

func backupSpec(source, target string) map[string]any {
	return map[string]any{"source": source, "target": map[string]any{"pvc": map[string]any{"claimName": target, "path": "backups"}}}
}

var (
	backupGVK  = api.BackupKind(storeGVK)
	restoreGVK = api.RestoreKind(storeGVK)
)

// A backup copies the release's claim with a mover pod (the operator's
// image, the claim read-only, non-root, read-only root file system), keeps
// the CR, values, Secret and ConfigMap in its contents Secret and reports
// sizes; after the CR and its claim are deleted, a restore recreates the
// claim with Helm's ownership, refills it, then creates the CR, which the
// operator deploys again adopting the claim. No secret value reaches a
// status or an event.
func TestBackupAndRestore(t *testing.T) {
	w := newWorld(t)
	w.store("shop", map[string]any{"greeting": "bonjour"})
	w.claim("backups")
	w.create(backupGVK, "nightly", backupSpec("shop", "backups"))
	st := w.status(backupGVK, "nightly", phaseIs(api.PhaseRunning))
	if st["chart"] != "store-0.1.0" {
		t.Errorf("status.chart = %v", st["chart"])
	}
	pods := w.kubelet(api.BackupLabel+"=nightly", mover.Result{Size: 4096, Files: 2})
	pod := pods[0]
	c := pod.Spec.Containers[0]
	wantCmd := []string{backup.MoverBinary, "mover", "backup", "--from", "/source", "--to", "/archive/backups/" + w.ns + "/nightly/shop-data.tar.gz"}
	if pod.Spec.Containers[0].Image != moverImage || strings.Join(c.Command, " ") != strings.Join(wantCmd, " ") {
		t.Errorf("mover pod runs %s %q, want %s %q", c.Image, c.Command, moverImage, wantCmd)
	}
	if !*c.SecurityContext.ReadOnlyRootFilesystem || !*c.SecurityContext.RunAsNonRoot || *pod.Spec.SecurityContext.RunAsUser != backup.DefaultMoverUser {
		t.Errorf("mover security: %+v, pod %+v", c.SecurityContext, pod.Spec.SecurityContext)
	}
	if src := pod.Spec.Volumes[0].PersistentVolumeClaim; src.ClaimName != "shop-data" || !src.ReadOnly {
		t.Errorf("source volume %+v, want shop-data read-only", src)
	}
	st = w.status(backupGVK, "nightly", phaseIs(api.PhaseCompleted))
	if st["size"] != int64(4096) || st["objects"] != int64(4) {
		t.Errorf("completed backup: %v", st)
	}
	w.noSecretsShown(backupGVK, "nightly")
	if n := w.noneLeftIn(w.ns, api.BackupLabel+"=nightly"); n != 0 {
		t.Errorf("%d mover pod(s) left after the backup", n)
	}

	// Lose the CR and its data.
	if err := w.res(storeGVK).Delete(w.ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.gone("Store shop", func() error { _, err := w.res(storeGVK).Get(w.ctx, "shop", metav1.GetOptions{}); return err })
	w.unprotect("shop-data")

	w.create(restoreGVK, "back", map[string]any{"backupName": "nightly"})
	w.status(restoreGVK, "back", phaseIs(api.PhaseRunning))
	pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(w.ctx, "shop-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim is not recreated before the CR: %v", err)
	}
	if pvc.Annotations["meta.helm.sh/release-name"] != "shop" || pvc.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("restored claim lacks Helm's ownership: %v %v", pvc.Labels, pvc.Annotations)
	}
	if _, err := w.res(storeGVK).Get(w.ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CR exists before its volume is refilled: %v", err)
	}
	pods = w.kubelet(api.RestoreLabel+"=back", mover.Result{Size: 4096, Files: 2})
	if c := pods[0].Spec.Containers[0]; c.Command[2] != "restore" || !pods[0].Spec.Volumes[1].PersistentVolumeClaim.ReadOnly {
		t.Errorf("restore mover: %q, archive volume %+v", c.Command, pods[0].Spec.Volumes[1])
	}
	w.bind("shop-data")
	st = w.status(restoreGVK, "back", phaseIs(api.PhaseCompleted))
	if st["restored"] != w.ns+"/shop" {
		t.Errorf("status.restored = %v", st["restored"])
	}
	cr, err := w.res(storeGVK).Get(w.ctx, "shop", metav1.GetOptions{})
	if err != nil || cr.Object["spec"].(map[string]any)["greeting"] != "bonjour" {
		t.Errorf("restored CR: %v, %v", cr, err)
	}
	pvc, err = w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(w.ctx, "shop-data", metav1.GetOptions{})
	if err != nil || pvc.Labels[reconciler.ManagedLabel] != "true" {
		t.Errorf("the release did not adopt the restored claim: %v, %v", pvc.Labels, err)
	}
	w.noSecretsShown(restoreGVK, "back")
}

// unprotect waits until a claim is deleted, removes the protection
// finalizer (no controller does here), and waits until it is gone.
func (w *world) unprotect(claim string) {
	w.t.Helper()
	pvcs := w.cs.CoreV1().PersistentVolumeClaims(w.ns)
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil || pvc.DeletionTimestamp == nil {
			return false, nil
		}
		pvc.Finalizers = nil
		_, _ = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		return false, nil
	})
	if err != nil {
		w.t.Fatalf("claim %s not deleted", claim)
	}
}

// noSecretsShown fails when the Secret's value is in the object's status
// or in an event.
func (w *world) noSecretsShown(gvk schema.GroupVersionKind, name string) {
	w.t.Helper()
	u, err := w.res(gvk).Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	data, _ := json.Marshal(u.Object["status"])
	events, _ := w.cs.CoreV1().Events(w.ns).List(w.ctx, metav1.ListOptions{})
	for _, e := range events.Items {
		data = append(data, e.Message...)
	}
	if strings.Contains(string(data), "s3cr3t-never-logged") {
		w.t.Errorf("a secret value is shown in the status or events of %s %s", gvk.Kind, name)
	}
}

func (w *world) gone(what string, get func() error) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return apierrors.IsNotFound(get()), nil
	})
	if err != nil {
		cr, _ := w.res(storeGVK).List(w.ctx, metav1.ListOptions{})
		pvcs, _ := w.cs.CoreV1().PersistentVolumeClaims(w.ns).List(w.ctx, metav1.ListOptions{})
		w.t.Fatalf("%s still exists; stores %v; claims %v", what, cr, pvcs)
	}
}
