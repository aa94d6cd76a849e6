package release

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/chartpilot/chartpilot/operator/health"

	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// deployment is a Deployment as the API server returns it: spec, defaults,
// managedFields and a status.
func deployment(generation, available int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": generation,
			"labels":            map[string]any{"app": "web"},
			"annotations":       map[string]any{"deployment.kubernetes.io/revision": "1"},
			"ownerReferences":   []any{map[string]any{"apiVersion": "charts.example.com/v1", "kind": "App", "name": "a", "uid": "o1", "controller": true}},
			"managedFields":     []any{map[string]any{"manager": "helm", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}},
			"creationTimestamp": "2026-01-01T00:00:00Z",
		},
		"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "pause", "imagePullPolicy": "IfNotPresent"}}}}},
		"status": map[string]any{"observedGeneration": generation, "replicas": int64(1), "updatedReplicas": int64(1),
			"readyReplicas": available, "availableReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": map[bool]string{true: "True", false: "False"}[available > 0]}}},
	}}
}

// hpaObject is an HPA as the API server returns it: a kind that counts no
// generation, whose controller writes its status at every sync.
func hpaObject(rv string, maxReplicas, current int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "h1", "resourceVersion": rv, "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"minReplicas": int64(1), "maxReplicas": maxReplicas,
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
		"status": map[string]any{"currentReplicas": current, "desiredReplicas": current},
	}}
}

// hpa is the cached view of hpaObject.
func hpa(rv string, maxReplicas, current int64) *unstructured.Unstructured {
	return view(hpaObject(rv, maxReplicas, current))
}

func TestContent(t *testing.T) {
	if c := Content(deployment(1, 1)); c != "" {
		t.Errorf("a Deployment (it counts generations) has content %q, want none", c)
	}
	if Content(hpaObject("7", 3, 1)) == "" || Content(hpaObject("7", 3, 1)) != Content(hpa("8", 3, 2)) {
		t.Error("an HPA and its view after a status write differ in content")
	}
	if Content(hpa("7", 3, 1)) == Content(hpa("7", 4, 1)) {
		t.Error("a change of the HPA's spec left its content as it was")
	}
}

func TestViewTransform(t *testing.T) {
	tests := []struct {
		name string
		// in is what the informer receives.
		in any
		// check looks at what the cache keeps.
		check func(t *testing.T, out any)
	}{{
		name: "a ready Deployment: metadata and readiness, no spec, status or managedFields",
		in:   deployment(2, 1),
		check: func(t *testing.T, out any) {
			v := out.(*unstructured.Unstructured)
			if !isView(v) || v.Object["spec"] != nil || v.Object["status"] != nil || v.GetManagedFields() != nil {
				t.Errorf("not a view: %v", v.Object)
			}
			ref := ControllerOf(v)
			if v.GetName() != "web" || v.GetNamespace() != "ns" || v.GetGeneration() != 2 || v.GetResourceVersion() != "7" ||
				ref == nil || ref.Name != "a" || ref.Kind != "App" || ref.APIVersion != "charts.example.com/v1" || v.GetKind() != "Deployment" {
				t.Errorf("metadata lost: %v", v.Object)
			}
			// Labels, annotations, owner references and the UID are summed
			// up or left out: a view holds only what a reconcile reads, in
			// two small maps.
			meta := v.Object["metadata"].(map[string]any)
			if len(meta) != 4 || len(v.Object) > 8 {
				t.Errorf("the view keeps more than it needs: %v", v.Object)
			}
			if !SameMetadata(v, deployment(2, 1)) {
				t.Error("the view's metadata digest differs from the object's")
			}
			if st, _ := Readiness(v); st != status.CurrentStatus {
				t.Errorf("readiness %s, want Current", st)
			}
		},
	}, {
		name: "a Deployment not available yet says why",
		in:   deployment(1, 0),
		check: func(t *testing.T, out any) {
			st, msg := Readiness(out.(*unstructured.Unstructured))
			if st != status.InProgressStatus || msg == "" {
				t.Errorf("readiness %s %q, want InProgress with a message", st, msg)
			}
		},
	}, {
		name: "a pod keeps its labels (its workload lists it by them); primary-resource annotations are kept",
		in: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
			"name": "web-1", "namespace": "ns", "labels": map[string]any{"app": "web"},
			"annotations": map[string]any{PrimaryResourceAnnotation: "ns/a", PrimaryResourceTypeAnnotation: "App.charts.example.com", "other": "x"},
		}}},
		check: func(t *testing.T, out any) {
			v := out.(*unstructured.Unstructured)
			if v.GetLabels()["app"] != "web" || len(v.GetAnnotations()) != 2 || v.GetAnnotations()[PrimaryResourceAnnotation] != "ns/a" {
				t.Errorf("labels %v, annotations %v", v.GetLabels(), v.GetAnnotations())
			}
		},
	}, {
		name: "a view stays as it is",
		in:   view(deployment(1, 1)),
		check: func(t *testing.T, out any) {
			if st, _ := Readiness(out.(*unstructured.Unstructured)); st != status.CurrentStatus {
				t.Errorf("readiness %s", st)
			}
		},
	}, {
		name: "metadata-only objects (release records) only lose their managedFields",
		in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.a.v1", Labels: map[string]string{"owner": "helm"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "chartpilot"}}}},
		check: func(t *testing.T, out any) {
			m := out.(*metav1.PartialObjectMetadata)
			if m.ManagedFields != nil || m.Labels["owner"] != "helm" {
				t.Errorf("%+v", m.ObjectMeta)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ViewTransform(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, out)
		})
	}
}

func TestUnchanged(t *testing.T) {
	live := func(rv string, gen int64, app, revision string) *unstructured.Unstructured {
		u := deployment(gen, 1)
		u.SetResourceVersion(rv)
		u.SetLabels(map[string]string{"app": app})
		u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": revision})
		return view(u)
	}
	verified := func(u *unstructured.Unstructured) *desiredObject {
		o := &desiredObject{}
		o.verify(u)
		return o
	}
	tests := []struct {
		name string
		o    *desiredObject
		live *unstructured.Unstructured
		want bool
	}{
		{"never verified", &desiredObject{}, live("7", 1, "web", "1"), false},
		{"the version verified", verified(live("7", 1, "web", "1")), live("7", 1, "web", "1"), true},
		{"status changed: same generation, same metadata", verified(live("7", 1, "web", "1")), live("8", 1, "web", "1"), true},
		{"a controller's bookkeeping annotation changed", verified(live("7", 1, "web", "1")), live("8", 1, "web", "2"), true},
		{"a label changed", verified(live("7", 1, "web", "1")), live("8", 1, "other", "1"), false},
		{"spec changed: new generation", verified(live("7", 1, "web", "1")), live("8", 2, "web", "1"), false},
		{"a kind without generation: its status written", verified(hpa("7", 3, 1)), hpa("8", 3, 2), true},
		{"a kind without generation: its spec changed", verified(hpa("7", 3, 1)), hpa("8", 4, 1), false},
		{"a kind without generation, verified whole, then its status written", verified(hpaObject("7", 3, 1)), hpa("8", 3, 2), true},
		{"a kind without generation whose content is unknown", verified(func() *unstructured.Unstructured {
			u := hpa("7", 3, 1)
			delete(u.Object, contentKey)
			return u
		}()), hpa("8", 3, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.unchanged(tt.live); got != tt.want {
				t.Errorf("unchanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	cm, deploy := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	objects := []desiredObject{{gvk: cm, name: "a"}, {gvk: deploy, name: "b"}, {gvk: cm, name: "c"}}
	if got, want := kinds(objects), []schema.GroupVersionKind{cm, deploy}; !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v", got, want)
	}
}

// What Helm created is verified at the version created, once, for the
// release that created it.
func TestCreatedLog(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	created := func(name, rv, release string) *resource.Info {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(name)
		u.SetNamespace("ns")
		u.SetResourceVersion(rv)
		if release != "" {
			u.SetAnnotations(map[string]string{helmReleaseName: release, helmReleaseNamespace: "ns"})
		}
		return &resource.Info{Name: name, Namespace: "ns", Object: u, Mapping: &meta.RESTMapping{GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace}}
	}
	var l createdLog
	l.add(kube.ResourceList{created("a", "5", "web"), created("b", "", "web"), created("c", "6", "")})
	rel := &helmrelease.Release{Name: "web", Namespace: "ns"}
	if v, ok := l.take(rel, gvk, "ns", "a"); !ok || v.resourceVersion != "5" {
		t.Errorf("a: %v %v, want version 5", v, ok)
	}
	if _, ok := l.take(rel, gvk, "ns", "a"); ok {
		t.Error("a taken twice")
	}
	if _, ok := l.take(rel, gvk, "ns", "b"); ok {
		t.Error("b has no version: it was not created")
	}
	if _, ok := l.take(&helmrelease.Release{Name: "", Namespace: "ns"}, gvk, "ns", "c"); ok {
		t.Error("c belongs to no release")
	}
	if len(l.releases) != 0 {
		t.Errorf("left behind: %v", l.releases)
	}
}

// A view keeps the problem of an object that is not healthy, the same as
// the whole object gives, and a workload's pod selector with it.
func TestViewProblem(t *testing.T) {
	unavailable := deployment(1, 0)
	unavailable.Object["spec"].(map[string]any)["selector"] = map[string]any{"matchLabels": map[string]any{"app": "web"}}
	crashing := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-1", "namespace": "ns", "labels": map[string]any{"app": "web"}},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{map[string]any{
			"name": "app", "image": "pause",
			"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
			"lastState": map[string]any{"terminated": map[string]any{"exitCode": int64(2), "reason": "Error"}},
			"ready":     false, "restartCount": int64(3), "imageID": "",
		}}},
	}}
	pending := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": "data", "namespace": "ns"},
		"status":   map[string]any{"phase": "Pending"},
	}}
	tests := []struct {
		name         string
		obj          *unstructured.Unstructured
		wantReason   string // empty: healthy
		wantSelector string // of a workload not healthy
	}{
		{name: "a ready Deployment", obj: deployment(1, 1)},
		{name: "an unavailable Deployment", obj: unavailable, wantReason: health.ReasonNotReady, wantSelector: "app=web"},
		{name: "a crash-looping pod", obj: crashing, wantReason: "CrashLoopBackOff"},
		{name: "a claim not bound", obj: pending, wantReason: health.ReasonClaimPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantBad := health.Object(tt.obj)
			v := view(tt.obj)
			got, bad := Problem(v)
			if bad != wantBad || got != want {
				t.Fatalf("Problem(view) = %+v, %v; the object's is %+v, %v", got, bad, want, wantBad)
			}
			if got.Reason != tt.wantReason {
				t.Errorf("reason %q, want %q", got.Reason, tt.wantReason)
			}
			if tt.wantSelector == "" {
				return
			}
			sel, err := podSelector(v)
			if err != nil {
				t.Fatal(err)
			}
			if sel.String() != tt.wantSelector {
				t.Errorf("pod selector %q, want %q", sel, tt.wantSelector)
			}
		})
	}
}

// The objects of releases share one dynamic client per resource and
// namespace: a release in sync holds no client of its own per object.
// measureViewEnv set makes TestViewHeldBytes measure in this process.
const measureViewEnv = "CHARTPILOT_MEASURE_VIEW"

func TestResourceClientsShared(t *testing.T) {
	c, err := NewClient(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	a, b := c.resource(cms, "a"), c.resource(cms, "a")
	if a != b {
		t.Error("two clients of configmaps in namespace a")
	}
	if c.resource(cms, "b") == a || c.resource(cms, "") == a {
		t.Error("namespaces b or none share namespace a's client")
	}
	if c.resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}, "a") == a {
		t.Error("services share configmaps' client")
	}
}

// What the cache holds per object of a release: its view, a fraction of
// the object (measured on 1000 Deployments as the API server sends them).
// The heap is measured in a process of its own: in the test binary, the
// goroutines other tests leave behind allocate and free meanwhile, and
// moved the object's measure from 4.9 KB to 2.4 KB.
func TestViewHeldBytes(t *testing.T) {
	if os.Getenv(measureViewEnv) == "" {
		// -test.short: the child starts no API server (TestMain).
		cmd := exec.Command(os.Args[0], "-test.run=^TestViewHeldBytes$", "-test.v", "-test.short")
		cmd.Env = append(os.Environ(), measureViewEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("measured in a process of its own:\n%s", out)
		if err != nil || !strings.Contains(string(out), "a Deployment:") {
			t.Fatalf("the measure failed: %v", err)
		}
		return
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	held := func(build func() any) float64 {
		out := make([]any, 1000)
		before := heap()
		for i := range out {
			out[i] = build()
		}
		n := heap() - before
		runtime.KeepAlive(out)
		return float64(n) / float64(len(out))
	}
	whole := held(func() any { return deployment(2, 1) })
	viewed := held(func() any { return view(deployment(2, 1)) })
	t.Logf("a Deployment: %.0f bytes, its view %.0f", whole, viewed)
	if viewed > 1024 || viewed > whole/3 {
		t.Errorf("a view holds %.0f bytes (the object %.0f): want under 1 KiB and a third of the object", viewed, whole)
	}
}
