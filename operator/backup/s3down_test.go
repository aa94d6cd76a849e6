package backup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// objectStore is the local cluster's object-store binary, run by a test
// on a loopback port with its data in a folder that outlives a restart.
type objectStore struct {
	t          *testing.T
	bin, root  string
	addr       string
	id, secret string
	cmd        *exec.Cmd
}

func newObjectStore(t *testing.T) *objectStore {
	t.Helper()
	inst, err := toolchain.Ensure(t.Context(), toolchain.Options{Only: []string{"object-store"}, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &objectStore{t: t, bin: inst.Binary("object-store"), root: t.TempDir(), addr: addr, id: "test-" + rand.Text()[:8], secret: rand.Text()}
	t.Cleanup(s.stop)
	return s
}

// start runs the store and waits until it answers.
func (s *objectStore) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "-root="+s.root, "-listen="+s.addr)
	s.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s.id, "AWS_SECRET_ACCESS_KEY="+s.secret)
	s.cmd.Stderr = io.Discard
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(s.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + s.addr + "/-/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		s.t.Fatalf("the object store at %s does not answer", s.addr)
	}
}

// stop ends the store and waits until it exited.
func (s *objectStore) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *objectStore) client() *minio.Client {
	s.t.Helper()
	c, err := mover.S3{Endpoint: s.addr, Insecure: true, Region: "us-east-1", AccessKeyID: s.id, SecretAccessKey: s.secret}.Client()
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// keys lists the objects under prefix.
func (s *objectStore) keys(prefix string) []string {
	s.t.Helper()
	var out []string
	for obj := range s.client().ListObjects(s.t.Context(), "backups", minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			s.t.Fatal(obj.Err)
		}
		out = append(out, obj.Key)
	}
	return out
}

// A Backup deleted while its object store is down stays, its status and
// an event saying the store does not answer and when the next attempt
// comes; once the store is back, its archive is deleted and it goes.
func TestDeleteBackupWhileTheStoreIsDown(t *testing.T) {
	w := newWorld(t)
	store := newObjectStore(t)
	store.start()
	if err := store.client().MakeBucket(w.ctx, "backups", minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	w.store("shop", map[string]any{"greeting": "bonjour"})
	w.secret("s3-creds", map[string]string{api.S3AccessKeyIDKey: store.id, api.S3SecretAccessKeyKey: store.secret})
	w.create(backupGVK, "b", s3Spec("shop", store.addr, "s3-creds"))
	w.status(backupGVK, "b", phaseIs(api.PhaseRunning))
	// What the mover pod would upload.
	key := w.ns + "/b/shop-data.tar.gz"
	data := []byte("an archive")
	if _, err := store.client().PutObject(w.ctx, "backups", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	w.kubelet(api.BackupLabel+"=b", mover.Result{Size: int64(len(data)), Files: 1})
	w.status(backupGVK, "b", phaseIs(api.PhaseCompleted))

	store.stop()
	began := w.deleteBackup("b")
	st := w.status(backupGVK, "b", reasonOf(backup.ReasonArchiveDeletionFailed))
	msg, _ := st["message"].(string)
	for _, want := range []string{"the object store at " + store.addr + " does not answer", "next attempt in 5s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("status message %q lacks %q", msg, want)
		}
	}
	w.eventWith("b", backup.ReasonArchiveDeletionFailed, "does not answer")
	w.noSecretsShown(backupGVK, "b")
	time.Sleep(2 * time.Second)
	if _, err := w.res(backupGVK).Get(w.ctx, "b", metav1.GetOptions{}); err != nil {
		t.Fatalf("the backup went while its store is down: %v", err)
	}

	store.start()
	w.backupGone("b")
	t.Logf("the backup went %s after its deletion, the store down for the first 2 s of it", time.Since(began).Round(100*time.Millisecond))
	if left := store.keys(w.ns + "/b/"); len(left) != 0 {
		t.Errorf("objects left in the bucket: %v", left)
	}
	w.eventWith("b", "ArchivesDeleted", fmt.Sprintf("deleted 1 archive file(s) s3://backups/%s/b/", w.ns))
}
