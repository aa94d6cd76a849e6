package operator

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/go-logr/logr/funcr"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// Releases installed by operators built on Helm 3 — chartpilot's runtime
// before Helm 4 and operator-sdk's helm-operator, which adopted projects
// bring — are upgraded in place by the Helm 4 runtime: the same objects
// (UIDs), every earlier revision kept, the next revision number. The
// fixtures are what those operators left in a cluster (testdata/helm3/gen).
func TestUpgradesHelm3Releases(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	tests := []struct {
		fixture string
		// digested: the records carry chartpilot's digest label, so an
		// unchanged CR is in sync and not upgraded on takeover.
		digested bool
	}{
		{fixture: "chartpilot.yaml", digested: true},
		{fixture: "helm-operator.yaml"},
	}
	// Everything is restored before the operator starts: it would install
	// a CR whose records are not there yet.
	namespaces := map[string]string{}
	for _, tt := range tests {
		namespaces[tt.fixture] = e.restoreHelm3(t, filepath.Join("testdata", "helm3", tt.fixture))
	}
	uids := map[string]map[string]types.UID{}
	for _, tt := range tests {
		uids[tt.fixture] = e.releaseUIDs(t, namespaces[tt.fixture])
	}
	startOperator(t, func(o *Options, _ *watches.Watch) {
		if os.Getenv("HELM3_DEBUG") != "" {
			o.Log = funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{Verbosity: 3})
		}
	})
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			ns := namespaces[tt.fixture]
			e.waitCondition(ns, "web", reconciler.TypeDeployed, metav1.ConditionTrue, "")
			before := e.revisions(t, ns)
			if len(before) < 2 {
				t.Fatalf("revisions %v after takeover: the Helm 3 history is gone", before)
			}
			if tt.digested && len(before) != 2 {
				t.Errorf("revisions %v: the release was upgraded on takeover though its CR did not change", before)
			}
			e.patchApp(ns, "web", map[string]any{"spec": map[string]any{"greeting": "three"}})
			e.waitGreeting(ns, "web", "three")
			after := e.waitRevisions(t, ns, len(before)+1)
			if !slices.Equal(after[:len(before)], before) || after[len(after)-1] != before[len(before)-1]+1 {
				t.Errorf("revisions %v after the upgrade, want %v and the next one", after, before)
			}
			if got := e.releaseUIDs(t, ns); !maps.Equal(got, uids[tt.fixture]) {
				t.Errorf("objects replaced by the upgrade: UIDs %v, were %v", got, uids[tt.fixture])
			}
		})
	}
}

// restoreHelm3 creates the namespace, the CR, the release records and the
// release's objects of a fixture, as the Helm 3 operator left them, and
// returns the namespace. The CR gets a new UID: the objects' owner
// references, and those in the records' manifests, are pointed at it.
func (e *env) restoreHelm3(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 || objs[0].GetKind() != "App" {
		t.Fatalf("%s: the CR must come first", file)
	}
	ns := objs[0].GetNamespace()
	if _, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var owner, was types.UID
	for _, u := range objs {
		if u.GetKind() == "App" {
			was = u.GetUID()
		}
		for _, f := range []string{"uid", "creationTimestamp"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(u.Object, "status")
		refs := u.GetOwnerReferences()
		for i := range refs {
			refs[i].UID = owner
		}
		u.SetOwnerReferences(refs)
		if u.GetKind() == "Secret" {
			swapRecordUID(t, u, was, owner)
		}
		gvk := u.GroupVersionKind()
		// The fixtures' kinds are built-in or App, whose plurals are regular.
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		created, err := e.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("restoring %s %s: %v", gvk.Kind, u.GetName(), err)
		}
		if gvk.Kind == "App" {
			owner = created.GetUID()
		}
	}
	return ns
}

// swapRecordUID replaces the UID was with now in a release record
// (the Secret's data is base64 of gzipped JSON).
func swapRecordUID(t *testing.T, u *unstructured.Unstructured, was, now types.UID) {
	t.Helper()
	data, _, _ := unstructured.NestedString(u.Object, "data", "release")
	outer, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatalf("record %s: %v", u.GetName(), err)
	}
	gz, err := base64.StdEncoding.DecodeString(string(outer))
	if err != nil {
		t.Fatalf("record %s: %v", u.GetName(), err)
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("record %s: %v", u.GetName(), err)
	}
	js, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("record %s: %v", u.GetName(), err)
	}
	if !bytes.Contains(js, []byte(was)) {
		t.Fatalf("record %s does not name the CR's UID %s", u.GetName(), was)
	}
	js = bytes.ReplaceAll(js, []byte(was), []byte(now))
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(js); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	inner := base64.StdEncoding.EncodeToString(buf.Bytes())
	if err := unstructured.SetNestedField(u.Object, base64.StdEncoding.EncodeToString([]byte(inner)), "data", "release"); err != nil {
		t.Fatal(err)
	}
}

// releaseUIDs are the UIDs of the release web's objects.
func (e *env) releaseUIDs(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	if cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); err == nil {
		out["ConfigMap"] = cm.UID
	}
	if s, err := e.cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		out["Service"] = s.UID
	}
	if d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		out["Deployment"] = d.UID
	}
	if len(out) != 3 {
		t.Fatalf("release web in %s has %d of its 3 objects", ns, len(out))
	}
	return out
}

// revisions lists the release web's recorded revisions, in order.
func (e *env) revisions(t *testing.T, ns string) []int {
	t.Helper()
	l, err := e.cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, s := range l.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			t.Fatalf("record %s: version %q", s.Name, s.Labels["version"])
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// waitRevisions waits for n revisions, the last one deployed.
func (e *env) waitRevisions(t *testing.T, ns string, n int) []int {
	t.Helper()
	var got []int
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got = e.revisions(t, ns)
		if len(got) != n {
			return false, nil
		}
		l, err := e.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web,status=deployed,version=" + strconv.Itoa(got[n-1])})
		return err == nil && len(l.Items) == 1, nil
	})
	if err != nil {
		t.Fatalf("revisions %v, want %d with the last deployed", got, n)
	}
	return got
}
