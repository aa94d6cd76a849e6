package scorecard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
)

// errNotProvable ends a test in the error state: the cluster or the
// bundle cannot show what it proves.
var errNotProvable = errors.New("not provable here")

// backupTarget is the claim the test's backups go to.
const backupTarget = "chartpilot-backup-target"

// backupRestoreTest (chartpilot-backup-restore): each alm-example is
// installed, a marker written into each of its release's volumes by a pod
// of the operator's image, backed up to a claim, deleted with its claims,
// restored, and its marker found again in the restored volumes; then
// restored again into another namespace under another name (its archives
// served from the claim by a pod of the backup's namespace), the marker
// found there too.
func backupRestoreTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "backup", func(ctx context.Context, c *clusterRun) error {
		err := c.backupRestore(ctx, run)
		if errors.Is(err, errNotProvable) {
			c.res.error(err)
			return nil
		}
		return err
	})
}

func (c *clusterRun) backupRestore(ctx context.Context, run *run) error {
	m, err := run.bundle.manifests()
	if err != nil {
		return err
	}
	if c.moverImage, err = operatorImage(m.CSV); err != nil {
		return err
	}
	if err := c.realPods(ctx); err != nil {
		return err
	}
	if err := c.copyNamespace(ctx); err != nil {
		return err
	}
	in, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
	if err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	for _, cr := range in.crs {
		if err := c.backupRestoreCR(ctx, cr); err != nil {
			return err
		}
	}
	return nil
}

// operatorImage is the image of the CSV's operator: the mover pods run it.
func operatorImage(csv *v1alpha1.ClusterServiceVersion) (string, error) {
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Image != "" {
				return ctr.Image, nil
			}
		}
	}
	return "", fmt.Errorf("CSV %s runs no container image: the mover pods of backups run the operator's", csv.Name)
}

// realPods refuses a cluster whose nodes are all kwok's: no pod runs there,
// so no volume can be copied.
func (c *clusterRun) realPods(ctx context.Context) error {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if _, fake := n.Annotations["kwok.x-k8s.io/node"]; !fake {
			return nil
		}
	}
	return fmt.Errorf("every node of the cluster is simulated (kwok): no pod runs to copy a volume: %w", errNotProvable)
}

// backupRestoreCR proves one CR's backup and restore.
func (c *clusterRun) backupRestoreCR(ctx context.Context, cr *unstructured.Unstructured) error {
	claims, err := c.releaseClaims(ctx, cr.GetName())
	if err != nil {
		return err
	}
	if len(claims) == 0 {
		return fmt.Errorf("the release of %s %s has no PersistentVolumeClaim: no data to back up: %w", cr.GetKind(), cr.GetName(), errNotProvable)
	}
	if err := c.targetClaim(ctx, claims); err != nil {
		return err
	}
	marker := fmt.Sprintf("chartpilot-backup-restore %s %d", cr.GetName(), time.Now().UnixNano())
	for _, claim := range claims {
		if err := c.probe(ctx, c.ns, claim.Name, marker, true); err != nil {
			return fmt.Errorf("writing the marker into claim %s: %w", claim.Name, err)
		}
	}
	c.res.logf("marker written into %d claim(s) of %s %s", len(claims), cr.GetKind(), cr.GetName())
	watched := cr.GroupVersionKind()
	name := cr.GetName() + "-backup"
	began := time.Now()
	if err := c.createObject(ctx, backupapi.BackupKind(watched), name, map[string]any{
		"source": cr.GetName(), "target": map[string]any{"pvc": map[string]any{"claimName": backupTarget}},
	}); err != nil {
		return err
	}
	st, err := c.waitPhase(ctx, backupapi.BackupKind(watched), name)
	if err != nil {
		return err
	}
	c.res.logf("backup %s Completed in %s (status: %v bytes in %v)", name, time.Since(began).Round(100*time.Millisecond), st["size"], st["duration"])
	if err := c.loseCR(ctx, cr, claims); err != nil {
		return err
	}
	began = time.Now()
	restore := cr.GetName() + "-restore"
	if err := c.createObject(ctx, backupapi.RestoreKind(watched), restore, map[string]any{"backupName": name}); err != nil {
		return err
	}
	if st, err = c.waitPhase(ctx, backupapi.RestoreKind(watched), restore); err != nil {
		return err
	}
	c.res.logf("restore %s Completed in %s: %v", restore, time.Since(began).Round(100*time.Millisecond), st["restored"])
	for _, claim := range claims {
		if err := c.probe(ctx, c.ns, claim.Name, marker, false); err != nil {
			return fmt.Errorf("the marker is not in restored claim %s: %w", claim.Name, err)
		}
	}
	c.res.logf("marker found in the %d restored claim(s)", len(claims))
	return c.restoreElsewhere(ctx, cr, name, marker)
}

// copyNamespace creates the namespace the test restores into besides its
// own; the operator watches it, with the CSV's permissions there.
func (c *clusterRun) copyNamespace(ctx context.Context) error {
	ns, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: c.ns + "-copy-", Labels: map[string]string{"app.kubernetes.io/created-by": "chartpilot-scorecard"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the namespace to restore into: %w", err)
	}
	c.watchAlso = append(c.watchAlso, ns.Name)
	c.onCleanup("namespace "+ns.Name, func(ctx context.Context) error {
		return ignoreNotFound(c.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}))
	})
	return nil
}

// restoreElsewhere restores the backup into the copy namespace under
// another name and finds the marker in each restored claim there. The
// restored CR is deleted while the operator runs.
func (c *clusterRun) restoreElsewhere(ctx context.Context, cr *unstructured.Unstructured, backupName, marker string) error {
	ns, name := c.watchAlso[0], cr.GetName()+"-copy"
	if err := c.grantRestores(ctx, cr.GroupVersionKind(), ns); err != nil {
		return err
	}
	began := time.Now()
	restore := cr.GetName() + "-restore-copy"
	if err := c.createObject(ctx, backupapi.RestoreKind(cr.GroupVersionKind()), restore, map[string]any{
		"backupName": backupName, "targetNamespace": ns, "targetName": name,
	}); err != nil {
		return err
	}
	ri, err := c.resource(cr.GroupVersionKind(), ns)
	if err != nil {
		return err
	}
	c.onCleanupFirst(cr.GetKind()+" "+ns+"/"+name, func(ctx context.Context) error {
		if err := ignoreNotFound(ri.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, pollInterval, c.opts.WaitTime, true, func(ctx context.Context) (bool, error) {
			_, err := ri.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	st, err := c.waitPhase(ctx, backupapi.RestoreKind(cr.GroupVersionKind()), restore)
	if err != nil {
		return err
	}
	c.res.logf("restore %s into namespace %s Completed in %s: %v", restore, ns, time.Since(began).Round(100*time.Millisecond), st["restored"])
	vols, _ := st["volumes"].([]any)
	for _, v := range vols {
		claim, _ := v.(map[string]any)["claimName"].(string)
		if err := c.probe(ctx, ns, claim, marker, false); err != nil {
			return fmt.Errorf("the marker is not in claim %s restored into namespace %s: %w", claim, ns, err)
		}
	}
	c.res.logf("marker found in the %d claim(s) restored into namespace %s as %s", len(vols), ns, name)
	return nil
}

// grantRestores lets the Restores of the test namespace restore into
// namespace ns, as that namespace's admin would: the operator restores
// into another namespace only where a grant there names the restore's.
// The grant goes with the namespace.
func (c *clusterRun) grantRestores(ctx context.Context, watched schema.GroupVersionKind, ns string) error {
	gvk := backupapi.RestoreGrantKind(watched)
	ri, err := c.resource(gvk, ns)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"from": []any{map[string]any{"namespace": c.ns}}}}}
	u.SetGroupVersionKind(gvk)
	u.SetName("from-" + c.ns)
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, ns, u.GetName(), err)
	}
	return nil
}

// releaseClaims are the claims of a release: those of its manifest and
// those labelled with its instance (a StatefulSet's).
func (c *clusterRun) releaseClaims(ctx context.Context, release string) ([]corev1.PersistentVolumeClaim, error) {
	_, objs, err := c.releaseObjects(release)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, o := range objs {
		if o.gvk.Kind == "PersistentVolumeClaim" && o.gvk.Group == "" {
			names[o.name] = true
		}
	}
	labelled, err := c.kube.CoreV1().PersistentVolumeClaims(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil {
		return nil, err
	}
	for _, p := range labelled.Items {
		names[p.Name] = true
	}
	var out []corev1.PersistentVolumeClaim
	for _, n := range sortedSet(names) {
		p, err := c.kube.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("claim %s of release %s: %w", n, release, err)
		}
		out = append(out, *p)
	}
	return out, nil
}

// targetClaim creates the backups' claim, as large as the claims backed
// up together (archives are compressed), in the default StorageClass.
func (c *clusterRun) targetClaim(ctx context.Context, claims []corev1.PersistentVolumeClaim) error {
	size := resource.MustParse("64Mi")
	for _, p := range claims {
		if q, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			size.Add(q)
		}
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: backupTarget}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
	}}
	_, err := c.kube.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the backup target claim: %w", err)
	}
	return nil
}

// probe writes the marker into a file of a claim of namespace ns, or checks
// that it is there, with a pod of the operator's image running as the
// claim's pods' user.
func (c *clusterRun) probe(ctx context.Context, ns, claim, marker string, write bool) error {
	reader, err := client.New(c.opts.Config, client.Options{})
	if err != nil {
		return err
	}
	sec, err := backup.OperandSecurity(ctx, reader, ns, claim)
	if err != nil {
		return err
	}
	verb := "check"
	if write {
		verb = "write"
	}
	name := "chartpilot-probe-" + verb + "-" + claim
	if len(name) > 63 {
		name = name[:63]
	}
	name = strings.TrimRight(name, "-.")
	pods := c.kube.CoreV1().Pods(ns)
	pod := backup.ProbePod(ns, name, c.moverImage, claim, "chartpilot-backup-marker", marker, write, sec)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating probe pod %s: %w", name, err)
	}
	defer func() { _ = pods.Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	var last *corev1.Pod
	var probeErr error
	err = wait.PollUntilContextTimeout(ctx, time.Second, c.opts.WaitTime, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		_, done, err := backup.MoverResult(p)
		probeErr = err
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("probe pod %s did not finish in %s: %s", name, c.opts.WaitTime, podSummary(last))
	}
	return probeErr
}

func podSummary(p *corev1.Pod) string {
	if p == nil {
		return "never seen"
	}
	parts := []string{string(p.Status.Phase)}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, w.Reason+": "+w.Message)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			parts = append(parts, cond.Message)
		}
	}
	return strings.Join(parts, ", ")
}

func (c *clusterRun) createObject(ctx context.Context, gvk schema.GroupVersionKind, name string, spec map[string]any) error {
	ri, err := c.resource(gvk, c.ns)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s: %w", gvk.Kind, name, err)
	}
	// Deleted while the operator runs: a Backup's finalizer deletes its
	// archives, and would hold the namespace once the operator is gone.
	c.onCleanupFirst(gvk.Kind+" "+name, func(ctx context.Context) error {
		if err := ignoreNotFound(ri.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
			return err
		}
		var st any
		err := wait.PollUntilContextTimeout(ctx, pollInterval, c.opts.WaitTime, true, func(ctx context.Context) (bool, error) {
			u, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				st = u.Object["status"]
			}
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("%s %s is not deleted (status %v): %w", gvk.Kind, name, st, err)
		}
		return nil
	})
	return nil
}

// waitPhase waits until a backup or restore is Completed; Failed ends the
// wait with its reason and message.
func (c *clusterRun) waitPhase(ctx context.Context, gvk schema.GroupVersionKind, name string) (map[string]any, error) {
	ri, err := c.resource(gvk, c.ns)
	if err != nil {
		return nil, err
	}
	var st map[string]any
	err = wait.PollUntilContextTimeout(ctx, pollInterval, 4*c.opts.WaitTime, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, _ = u.Object["status"].(map[string]any)
		switch backupapi.Phase(fmt.Sprint(st["phase"])) {
		case backupapi.PhaseCompleted:
			return true, nil
		case backupapi.PhaseFailed:
			return false, fmt.Errorf("%s %s Failed: %v: %v", gvk.Kind, name, st["reason"], st["message"])
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return st, fmt.Errorf("%s %s not Completed after %s: %v %v: %v", gvk.Kind, name, 4*c.opts.WaitTime, st["phase"], st["reason"], st["message"])
	}
	return st, err
}

// loseCR deletes the CR, waits until its release is uninstalled, then
// deletes its claims (a chart may keep them) and waits until they are gone.
func (c *clusterRun) loseCR(ctx context.Context, cr *unstructured.Unstructured, claims []corev1.PersistentVolumeClaim) error {
	ri, err := c.resource(cr.GroupVersionKind(), c.ns)
	if err != nil {
		return err
	}
	if err := ignoreNotFound(ri.Delete(ctx, cr.GetName(), metav1.DeleteOptions{})); err != nil {
		return err
	}
	pvcs := c.kube.CoreV1().PersistentVolumeClaims(c.ns)
	err = c.poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		left := slices.DeleteFunc(slices.Clone(claims), func(p corev1.PersistentVolumeClaim) bool {
			_ = ignoreNotFound(pvcs.Delete(ctx, p.Name, metav1.DeleteOptions{}))
			_, err := pvcs.Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s and its claims not gone after %s: %w", cr.GetKind(), cr.GetName(), c.opts.WaitTime, err)
	}
	c.res.logf("%s %s and its %d claim(s) deleted", cr.GetKind(), cr.GetName(), len(claims))
	return nil
}
