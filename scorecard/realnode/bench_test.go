package realnode

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

var vaultGVK = schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "Vault"}

// volumeMiB is the size of the volumes backed up and restored, in random
// bytes (gzip gains nothing: the worst case for the mover). The default
// proves the paths; the throughputs of the docs are measured with
// -volume-mib=1024.
var volumeMiB = flag.Int64("volume-mib", 64, "MiB of random bytes in the volumes backed up and restored")

// dataSize is the volume's size in bytes.
func dataSize() int64 { return *volumeMiB << 20 }

// volume names the volume's size in the tests' log lines.
func volume() string { return fmt.Sprintf("%d MiB", *volumeMiB) }

// measure backs up a Vault whose volume holds -volume-mib to a claim, restores it
// after its loss, then backs it up to the cluster's S3 store and restores it
// into another namespace under a new name, checking the bytes each time,
// and logs the times, the throughputs and the operator's memory.
func measure(t *testing.T, c *cluster.Cluster, projectDir, image string) {
	ctx := t.Context()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	installCRDs(t, projectDir, cfg)
	defer startOperator(t, cfg, projectDir, image, "bench", "bench-copy")()
	cr := crs{t, dyn}
	res, create := cr.resource, cr.create
	operand := images.Repository(c.RegistryAddr(), images.HelloServer)
	create(vaultGVK, "bench", "big", map[string]any{"size": "2Gi", "image": map[string]any{"repository": operand, "tag": "local"}})
	waitCR(t, res(vaultGVK, "bench"), "big")
	want := fill(t, cs, "bench", "big-data")
	target := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backups"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
	}}
	if _, err := cs.CoreV1().PersistentVolumeClaims("bench").Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rss := watchRSS()
	began := time.Now()
	create(api.BackupKind(vaultGVK), "bench", "to-claim", map[string]any{"source": "big", "target": map[string]any{"pvc": map[string]any{"claimName": "backups"}}})
	st := waitDone(t, res(api.BackupKind(vaultGVK), "bench"), "to-claim")
	took := time.Since(began)
	t.Logf("backup of %s to a claim: %s (status %v, %v bytes archived), %.0f MiB/s; operator process RSS max %d MiB (base %d MiB)", volume(),
		took.Round(100*time.Millisecond), st["duration"], st["size"], float64(dataSize())/took.Seconds()/(1<<20), rss.max()>>20, rss.base>>20)
	rss.stop()

	// Lose the CR and its claim, restore.
	if err := res(vaultGVK, "bench").Delete(ctx, "big", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, func() error { _, err := res(vaultGVK, "bench").Get(ctx, "big", metav1.GetOptions{}); return err })
	_ = cs.CoreV1().PersistentVolumeClaims("bench").Delete(ctx, "big-data", metav1.DeleteOptions{})
	gone(t, func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims("bench").Get(ctx, "big-data", metav1.GetOptions{})
		return err
	})
	began = time.Now()
	create(api.RestoreKind(vaultGVK), "bench", "from-claim", map[string]any{"backupName": "to-claim"})
	st = waitDone(t, res(api.RestoreKind(vaultGVK), "bench"), "from-claim")
	took = time.Since(began)
	t.Logf("restore of %s from a claim, the release Deployed and Ready: %s (status %v), %.0f MiB/s", volume(), took.Round(100*time.Millisecond), st["duration"], float64(dataSize())/took.Seconds()/(1<<20))
	check(t, cs, "bench", "big-data", want)

	// From the claim into another namespace under another name: a serving
	// pod of bench hands the archive to the restoring mover of bench-copy,
	// which lets the Restores of bench in.
	create(api.RestoreGrantKind(vaultGVK), "bench-copy", "from-bench", map[string]any{"from": []any{map[string]any{"namespace": "bench"}}})
	began = time.Now()
	create(api.RestoreKind(vaultGVK), "bench", "from-claim-away", map[string]any{"backupName": "to-claim", "targetNamespace": "bench-copy", "targetName": "fromclaim"})
	st = waitDone(t, res(api.RestoreKind(vaultGVK), "bench"), "from-claim-away")
	took = time.Since(began)
	t.Logf("restore of %s from a claim into namespace bench-copy as fromclaim, through a serving pod: %s (status %v: %v), %.0f MiB/s", volume(), took.Round(100*time.Millisecond), st["duration"], st["restored"], float64(dataSize())/took.Seconds()/(1<<20))
	check(t, cs, "bench-copy", "fromclaim-data", want)
	for _, ns := range []string{"bench", "bench-copy"} {
		noneLeft(t, cs, ns, api.RestoreLabel+"=from-claim-away,backup.chartpilot.io/mover")
	}

	// S3, then into another namespace under another name.
	store, _ := s3Bucket(ctx, t, c, cs, "bench", "backups")
	began = time.Now()
	create(api.BackupKind(vaultGVK), "bench", "to-s3", map[string]any{"source": "big", "target": map[string]any{"s3": map[string]any{
		"endpoint": store.PodEndpoint, "bucket": "backups", "prefix": "nightly", "region": store.Region, "insecure": true, "credentialsSecret": "s3"}}})
	st = waitDone(t, res(api.BackupKind(vaultGVK), "bench"), "to-s3")
	took = time.Since(began)
	t.Logf("backup of %s to S3: %s (status %v, %v bytes), %.0f MiB/s", volume(), took.Round(100*time.Millisecond), st["duration"], st["size"], float64(dataSize())/took.Seconds()/(1<<20))
	began = time.Now()
	create(api.RestoreKind(vaultGVK), "bench", "from-s3", map[string]any{"backupName": "to-s3", "targetNamespace": "bench-copy", "targetName": "copy"})
	st = waitDone(t, res(api.RestoreKind(vaultGVK), "bench"), "from-s3")
	took = time.Since(began)
	t.Logf("restore of %s from S3 into namespace bench-copy as copy: %s (status %v: %v), %.0f MiB/s", volume(), took.Round(100*time.Millisecond), st["duration"], st["restored"], float64(dataSize())/took.Seconds()/(1<<20))
	check(t, cs, "bench-copy", "copy-data", want)
	if left, _ := cs.CoreV1().Secrets("bench-copy").List(ctx, metav1.ListOptions{LabelSelector: api.RestoreLabel + "=from-s3"}); len(left.Items) > 0 {
		t.Error("the copy of the S3 credentials is left in bench-copy")
	}

	// A pre-backup hook through the kubelet's exec: a second hello-server
	// in the operand's container fails at once (its port is taken).
	hook := func(onError string) map[string]any {
		return map[string]any{"image": map[string]any{"repository": operand, "tag": "local"}, "podAnnotations": map[string]any{
			"pre.hook.backup.velero.io/command": `["/hello-server"]`, "pre.hook.backup.velero.io/container": "web",
			"pre.hook.backup.velero.io/on-error": onError}}
	}
	create(vaultGVK, "bench", "hooked", hook("Fail"))
	waitCR(t, res(vaultGVK, "bench"), "hooked")
	create(api.BackupKind(vaultGVK), "bench", "hook-fails", map[string]any{"source": "hooked", "target": map[string]any{"pvc": map[string]any{"claimName": "backups"}}})
	st = waitEnd(t, res(api.BackupKind(vaultGVK), "bench"), "hook-fails")
	msg := fmt.Sprint(st["message"])
	if st["reason"] != "HookFailed" || !strings.Contains(msg, "container web") || !strings.Contains(msg, "address already in use") {
		t.Errorf("a failing hook: %v: %v", st["reason"], msg)
	}
	t.Logf("a failing pre-backup hook: %v: %v", st["reason"], msg)
	postHooks(t, create, res, operand)
}

// postHooks runs a post-backup and a post-restore hook through the
// kubelet's exec: each a second hello-server in the operand's container,
// which fails at once (its port is taken). The post-backup one fails the
// backup after its volume was copied; the post-restore one fails a restore
// (from a claim into another namespace) once the restored release is up.
func postHooks(t *testing.T, create func(gvk schema.GroupVersionKind, ns, name string, spec map[string]any), res func(schema.GroupVersionKind, string) dynamic.ResourceInterface, operand string) {
	hooked := func(phase string) map[string]any {
		return map[string]any{"image": map[string]any{"repository": operand, "tag": "local"}, "podAnnotations": map[string]any{
			phase + "/command": `["/hello-server"]`, phase + "/container": "web"}}
	}
	create(vaultGVK, "bench", "post-backup", hooked("post.hook.backup.velero.io"))
	create(vaultGVK, "bench", "post-restore", hooked("post.hook.restore.velero.io"))
	waitCR(t, res(vaultGVK, "bench"), "post-backup")
	waitCR(t, res(vaultGVK, "bench"), "post-restore")
	target := map[string]any{"pvc": map[string]any{"claimName": "backups"}}
	create(api.BackupKind(vaultGVK), "bench", "post-backup-fails", map[string]any{"source": "post-backup", "target": target})
	st := waitEnd(t, res(api.BackupKind(vaultGVK), "bench"), "post-backup-fails")
	msg := fmt.Sprint(st["message"])
	vols, _ := st["volumes"].([]any)
	copied := len(vols) > 0
	for _, v := range vols {
		copied = copied && v.(map[string]any)["phase"] == string(api.PhaseCompleted)
	}
	if st["reason"] != "HookFailed" || !strings.Contains(msg, "post.hook.backup.velero.io") || !strings.Contains(msg, "address already in use") || !copied {
		t.Errorf("a failing post-backup hook: %v: %v (volumes %v)", st["reason"], msg, vols)
	}
	t.Logf("a failing post-backup hook, after the copy: %v: %v", st["reason"], msg)

	create(api.BackupKind(vaultGVK), "bench", "post-restore", map[string]any{"source": "post-restore", "target": target})
	waitDone(t, res(api.BackupKind(vaultGVK), "bench"), "post-restore")
	create(api.RestoreKind(vaultGVK), "bench", "post-restore-fails", map[string]any{"backupName": "post-restore", "targetNamespace": "bench-copy", "targetName": "hooked-copy"})
	st = waitEnd(t, res(api.RestoreKind(vaultGVK), "bench"), "post-restore-fails")
	msg = fmt.Sprint(st["message"])
	if st["reason"] != "HookFailed" || !strings.Contains(msg, "post.hook.restore.velero.io") || !strings.Contains(msg, "address already in use") {
		t.Errorf("a failing post-restore hook: %v: %v", st["reason"], msg)
	}
	t.Logf("a failing post-restore hook, the restored release up in bench-copy: %v: %v", st["reason"], msg)
}

// waitEnd waits until a backup or restore ends, either way.
func waitEnd(t *testing.T, ri dynamic.ResourceInterface, name string) map[string]any {
	t.Helper()
	var st map[string]any
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, _ = u.Object["status"].(map[string]any)
		return st["phase"] == string(api.PhaseCompleted) || st["phase"] == string(api.PhaseFailed), nil
	})
	if err != nil {
		t.Fatalf("%s did not end: %v", name, st)
	}
	return st
}

// installCRDs creates the project's CRDs (the scorecard deleted its own);
// those an earlier test of the shared cluster created are the same.
func installCRDs(t *testing.T, projectDir string, cfg *rest.Config) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(projectDir, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("CRDs of %s: %v", projectDir, err)
	}
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	var names []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), &crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		names = append(names, crd.Name)
	}
	if err := crdready.Wait(t.Context(), cfg, names, crdready.Options{Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// digest is a sha256 of what passes.
type digest struct{ h hash.Hash }

func newDigest() *digest                      { return &digest{h: sha256.New()} }
func (d *digest) Write(p []byte) (int, error) { return d.h.Write(p) }
func (d *digest) sum() string                 { return hex.EncodeToString(d.h.Sum(nil)) }

// fill writes dataSize random bytes into the claim's volume, through its
// host path (the real node is this machine), and returns a digest of them.
func fill(t *testing.T, cs kubernetes.Interface, ns, claim string) string {
	t.Helper()
	return fillDir(t, volumeDir(t, cs, ns, claim))
}

// fillDir writes dataSize random bytes into a volume's directory.
func fillDir(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	h := newDigest()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, dataSize()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(filepath.Join(dir, "blob"), 65532, 65532)
	return h.sum()
}

// check compares the restored claim's blob with the digest written.
func check(t *testing.T, cs kubernetes.Interface, ns, claim, want string) {
	t.Helper()
	checkDir(t, volumeDir(t, cs, ns, claim), ns+"/"+claim, want)
}

// checkDir compares the blob in a volume's directory with the digest written.
func checkDir(t *testing.T, dir, claim, want string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatalf("restored claim %s: %v", claim, err)
	}
	defer f.Close()
	h := newDigest()
	n, err := io.Copy(h, f)
	if err != nil || n != dataSize() || h.sum() != want {
		t.Errorf("restored claim %s holds %d bytes (digest match %v), %v", claim, n, h.sum() == want, err)
	}
}

// volumeDir is the host directory of a bound claim's hostPath volume.
func volumeDir(t *testing.T, cs kubernetes.Interface, ns, claim string) string {
	t.Helper()
	var dir string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return false, nil
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.HostPath == nil {
			return false, err
		}
		dir = pv.Spec.HostPath.Path
		return true, nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s has no hostPath volume: %v", ns, claim, err)
	}
	return dir
}

func waitCR(t *testing.T, ri dynamic.ResourceInterface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		ready := 0
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if (m["type"] == "Deployed" || m["type"] == "Ready") && m["status"] == "True" {
				ready++
			}
		}
		return ready == 2, nil
	})
	if err != nil {
		t.Fatalf("%s not Deployed and Ready", name)
	}
}

func waitDone(t *testing.T, ri dynamic.ResourceInterface, name string) map[string]any {
	t.Helper()
	var st map[string]any
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, _ = u.Object["status"].(map[string]any)
		switch st["phase"] {
		case string(api.PhaseCompleted):
			return true, nil
		case string(api.PhaseFailed):
			return false, fmt.Errorf("%v: %v", st["reason"], st["message"])
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (status %v)", name, err, st)
	}
	return st
}

// noneLeft waits until no pod or Secret of selector is left in ns: a
// restore cleans up once its status says it ended.
func noneLeft(t *testing.T, cs kubernetes.Interface, ns, selector string) {
	t.Helper()
	var pods, secrets int
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		sel := metav1.ListOptions{LabelSelector: selector}
		p, err := cs.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return false, nil
		}
		s, err := cs.CoreV1().Secrets(ns).List(ctx, sel)
		if err != nil {
			return false, nil
		}
		pods, secrets = len(p.Items), len(s.Items)
		return pods+secrets == 0, nil
	})
	if err != nil {
		t.Errorf("%d mover pod(s) and %d token Secret(s) of %s left in %s", pods, secrets, selector, ns)
	}
}

func gone(t *testing.T, get func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		err := get()
		return err != nil && strings.Contains(err.Error(), "not found"), nil
	})
	if err != nil {
		t.Fatal("still there")
	}
}

// rssWatch samples this process's resident memory (the operator runs in
// it, with the test and any test beside it: -run one test for the docs'
// numbers) every 100 ms.
type rssWatch struct {
	base   int64
	peak   atomic.Int64
	cancel func()
}

func watchRSS() *rssWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &rssWatch{base: rss(), cancel: cancel}
	go func() {
		for ctx.Err() == nil {
			if r := rss(); r > w.peak.Load() {
				w.peak.Store(r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

func (w *rssWatch) max() int64 { return w.peak.Load() }
func (w *rssWatch) stop()      { w.cancel() }

func rss() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// s3Bucket makes bucket in the cluster's object store, and the Secret "s3"
// in ns with the store's credentials, as a Backup's S3 target reads them.
func s3Bucket(ctx context.Context, t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, ns, bucket string) (cluster.ObjectStore, *minio.Client) {
	t.Helper()
	store, err := c.ObjectStore()
	if err != nil {
		t.Fatal(err)
	}
	s3 := mover.S3{Endpoint: store.Endpoint, Region: store.Region, Insecure: true, AccessKeyID: store.AccessKeyID, SecretAccessKey: store.SecretAccessKey}
	mc, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: store.Region}); err != nil {
		t.Fatal(err)
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3"}, StringData: map[string]string{api.S3AccessKeyIDKey: store.AccessKeyID, api.S3SecretAccessKeyKey: store.SecretAccessKey}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, creds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return store, mc
}
