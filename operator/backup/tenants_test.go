package backup_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

var grantGVK = api.RestoreGrantKind(storeGVK)

// An admin of one namespace, with what OLM's aggregated roles give
// namespace admins on the operator's kinds, cannot reach another
// namespace through a restore: a Restore into another namespace (or
// kube-system) fails with TargetNotGranted naming the grant to create and
// writes nothing there; she cannot create that grant herself; once the
// other namespace's admin does, the restore goes on there. She cannot
// write the digest her Backup recorded, and contents she edited are
// refused (ContentsTampered, naming the Secret), with nothing restored.
func TestTenantCannotRestoreAcross(t *testing.T) {
	w := newWorldIn(t, 1)
	other := w.others[0]
	w.completedBackup()
	alice := w.namespaceAdmin("alice")

	// The digest is in the status, which she may not write.
	b, err := alice.res(backupGVK, w.ns).Get(w.ctx, "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	digest, _, _ := unstructured.NestedString(b.Object, "status", "contentsDigest")
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("backup status.contentsDigest = %q", digest)
	}
	_ = unstructured.SetNestedField(b.Object, "sha256:0", "status", "contentsDigest")
	if _, err := alice.res(backupGVK, w.ns).UpdateStatus(w.ctx, b, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace admin updating a Backup's status: %v, want Forbidden", err)
	}

	// Secrets of the other namespace that share the names a restore would
	// use there: the Restore's author picks its name.
	theirs := []string{"into-" + other + "-token", "into-" + other + "-s3"}
	for _, name := range theirs {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "theirs"}}
		if _, err := w.cs.CoreV1().Secrets(other).Create(w.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, into := range []string{other, "kube-system"} {
		name := "into-" + into
		alice.create(restoreGVK, w.ns, name, map[string]any{"backupName": "nightly", "targetNamespace": into, "targetName": "copy"})
		st := w.status(restoreGVK, name, failedWith(backup.ReasonTargetNotGranted))
		msg, _ := st["message"].(string)
		for _, want := range []string{grantGVK.Kind, "namespace " + into + " does not let Restores of namespace " + w.ns, "{namespace: " + w.ns + "}"} {
			if !strings.Contains(msg, want) {
				t.Errorf("restore into %s: message %q does not say %q", into, msg, want)
			}
		}
		if n := w.restoredIn(into, name); n != "" {
			t.Errorf("a restore refused wrote into %s: %s", into, n)
		}
	}
	if n := w.leftIn(w.ns, api.RestoreLabel+"=into-"+other); n != 0 {
		t.Errorf("a restore refused left %d pod(s) or Secret(s) in its own namespace", n)
	}
	// Its cleanup, right after its status, deleted none of them.
	err = wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 3*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range theirs {
			if _, err := w.cs.CoreV1().Secrets(other).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Errorf("a restore refused deleted Secret %s/%s", other, name)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}

	grant := map[string]any{"from": []any{map[string]any{"namespace": w.ns}}}
	if err := alice.tryCreate(grantGVK, other, "from-"+w.ns, grant); !apierrors.IsForbidden(err) {
		t.Fatalf("a namespace admin creating a grant in another namespace: %v, want Forbidden", err)
	}
	w.grant(other) // by the other namespace's admin
	alice.create(restoreGVK, w.ns, "granted", map[string]any{"backupName": "nightly", "targetNamespace": other, "targetName": "copy"})
	w.status(restoreGVK, "granted", phaseIs(api.PhaseRunning))
	if _, err := w.cs.CoreV1().PersistentVolumeClaims(other).Get(w.ctx, "copy-data", metav1.GetOptions{}); err != nil {
		t.Errorf("the granted restore did not recreate its claim in %s: %v", other, err)
	}

	// Contents edited in her namespace, decoding as valid contents.
	secret := w.contentsSecret("nightly")
	secret.Data["contents.json.gz"] = edit(t, secret.Data["contents.json.gz"], func(c map[string]any) {
		c["values"] = map[string]any{"greeting": "edited"}
	})
	if _, err := alice.cs.CoreV1().Secrets(w.ns).Update(w.ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a namespace admin editing the contents Secret: %v", err)
	}
	alice.create(restoreGVK, w.ns, "edited", map[string]any{"backupName": "nightly", "targetName": "edited"})
	st := w.status(restoreGVK, "edited", failedWith(backup.ReasonContentsTampered))
	if msg, _ := st["message"].(string); !strings.Contains(msg, secret.Name) {
		t.Errorf("ContentsTampered message %q does not name Secret %s", msg, secret.Name)
	}
	if n := w.restoredIn(w.ns, "edited"); n != "" {
		t.Errorf("edited contents were restored: %s", n)
	}
}

// grant lets the Restores of the world's namespace restore into namespace
// into, as into's admin would.
func (w *world) grant(into string) {
	w.t.Helper()
	admin := &tenant{t: w.t, dyn: w.dyn}
	admin.create(grantGVK, into, "from-"+w.ns, map[string]any{"from": []any{map[string]any{"namespace": w.ns}}})
}

// tenant acts as one user.
type tenant struct {
	t   *testing.T
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

// namespaceAdmin binds user, in the world's namespace only, to what a
// namespace admin holds: the core kinds a release and a backup touch, and
// on the operator's kinds what OLM's aggregated admin role gives (every
// verb on the resource, none on its status subresource). envtest runs no
// controller manager to aggregate the built-in admin role, so the rules
// are spelled out.
func (w *world) namespaceAdmin(user string) *tenant {
	w.t.Helper()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps", "pods", "persistentvolumeclaims"}, Verbs: []string{"*"}}}
	for _, gvk := range []schema.GroupVersionKind{storeGVK, backupGVK, restoreGVK, grantGVK, api.ScheduleKind(storeGVK)} {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{gvk.Group}, Resources: []string{api.Plural(gvk.Kind)}, Verbs: []string{"*"}})
	}
	name := w.ns + "-" + user
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns}, Rules: rules}
	if _, err := w.cs.RbacV1().Roles(w.ns).Create(w.ctx, role, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := w.cs.RbacV1().RoleBindings(w.ns).Create(w.ctx, rb, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c := &tenant{t: w.t, cs: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
	// The authorizer learns of the binding from its informers: wait until
	// it lets the user in, or a busy API server fails the test's first read.
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
		Namespace: w.ns, Verb: "get", Group: backupGVK.Group, Resource: api.Plural(backupGVK.Kind)}}}
	err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		w.t.Fatalf("the binding of %s did not take effect: %v", user, err)
	}
	return c
}

func (c *tenant) res(gvk schema.GroupVersionKind, ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(gvk.GroupVersion().WithResource(api.Plural(gvk.Kind))).Namespace(ns)
}

func (c *tenant) tryCreate(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	_, err := c.res(gvk, ns).Create(c.t.Context(), u, metav1.CreateOptions{})
	return err
}

func (c *tenant) create(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) {
	c.t.Helper()
	if err := c.tryCreate(gvk, ns, name, spec); err != nil {
		c.t.Fatalf("creating %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
}

// restoredIn names what restore wrote in namespace ns: the CR "copy" or
// "edited", or any object labelled with the restore. Empty when nothing.
func (w *world) restoredIn(ns, restore string) string {
	w.t.Helper()
	var found []string
	for _, name := range []string{"copy", "edited"} {
		if _, err := w.dyn.Resource(storeGVK.GroupVersion().WithResource(api.Plural(storeGVK.Kind))).Namespace(ns).Get(w.ctx, name, metav1.GetOptions{}); err == nil {
			found = append(found, "Store "+name)
		}
	}
	opts := metav1.ListOptions{LabelSelector: api.RestoreLabel + "=" + restore}
	claims, err := w.cs.CoreV1().PersistentVolumeClaims(ns).List(w.ctx, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, c := range claims.Items {
		found = append(found, "PersistentVolumeClaim "+c.Name)
	}
	secrets, err := w.cs.CoreV1().Secrets(ns).List(w.ctx, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, s := range secrets.Items {
		found = append(found, "Secret "+s.Name)
	}
	cms, err := w.cs.CoreV1().ConfigMaps(ns).List(w.ctx, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, cm := range cms.Items {
		found = append(found, "ConfigMap "+cm.Name)
	}
	pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range pods.Items {
		found = append(found, "Pod "+p.Name)
	}
	return strings.Join(found, ", ")
}

// contentsSecret is the contents Secret of a backup of the world's namespace.
func (w *world) contentsSecret(backupName string) *corev1.Secret {
	w.t.Helper()
	list, err := w.cs.CoreV1().Secrets(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: api.BackupLabel + "=" + backupName})
	if err != nil {
		w.t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Type == backup.ContentsSecretType {
			return &list.Items[i]
		}
	}
	w.t.Fatalf("no contents Secret of backup %s", backupName)
	return nil
}

// edit decodes gzipped JSON contents, changes them and encodes them again.
func edit(t *testing.T, data []byte, change func(map[string]any)) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	change(c)
	if raw, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
