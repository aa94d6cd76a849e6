package reconciler

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/health"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/watches"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func owner(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "App"})
	u.SetName("web")
	u.SetNamespace(namespace)
	u.SetUID(types.UID("uid-1"))
	return u
}

func TestOwnerRenderer(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	rendered := `---
apiVersion: v1
kind: ConfigMap
metadata: {name: same-namespace}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-wide, labels: {keep: me}}
`
	out, err := ownerRenderer{owner: owner("ns"), mapper: mapper}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out.String(), "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects", len(objs))
	}
	tests := []struct {
		obj       *unstructured.Unstructured
		ownerRef  bool
		annotated bool
	}{
		{objs[0], true, false},
		{objs[1], false, true},
		{objs[2], false, true},
	}
	for _, tt := range tests {
		name := tt.obj.GetName()
		if got := len(tt.obj.GetOwnerReferences()) == 1; got != tt.ownerRef {
			t.Errorf("%s: owner reference %v, want %v", name, got, tt.ownerRef)
		}
		if got := tt.obj.GetAnnotations()[PrimaryResourceAnnotation] == "ns/web"; got != tt.annotated {
			t.Errorf("%s: primary-resource annotation %v, want %v", name, got, tt.annotated)
		}
		if tt.obj.GetLabels()[ManagedLabel] != "true" {
			t.Errorf("%s: labels %v", name, tt.obj.GetLabels())
		}
	}
	if objs[2].GetLabels()["keep"] != "me" {
		t.Error("existing labels dropped")
	}
	if ref := objs[0].GetOwnerReferences()[0]; ref.UID != "uid-1" || ref.Kind != "App" || !*ref.Controller {
		t.Errorf("owner reference %+v", ref)
	}
}

// requestView is what newRequest decides, comparable.
type requestView struct {
	Name, Namespace                  string
	Values                           map[string]any
	PostRenderDigest                 string
	UpgradeForce, RollbackForce      bool
	UninstallWait                    bool
	InstallHooksOff, UpgradeHooksOff bool
	UninstallHooksOff                bool
	DryRun                           watches.DryRun
	ServerSideApply                  bool
	HealthDeadline                   time.Duration
	Generation                       int64
	// Autoscale: the post-renderer adds HPAs.
	Autoscale bool
}

func viewOf(q *release.Request) requestView {
	pr, _ := q.PostRenderer.(ownerRenderer)
	return requestView{
		Name: q.Name, Namespace: q.Namespace, Values: q.Values, PostRenderDigest: q.PostRenderDigest,
		UpgradeForce: q.UpgradeForce, RollbackForce: q.RollbackForce, UninstallWait: q.UninstallWait,
		InstallHooksOff: q.InstallDisableHooks, UpgradeHooksOff: q.UpgradeDisableHooks, UninstallHooksOff: q.UninstallDisableHooks,
		DryRun: q.DryRun, ServerSideApply: q.ServerSideApply, HealthDeadline: q.HealthDeadline, Generation: q.Generation,
		Autoscale: pr.autoscale.On(),
	}
}

// The spec-to-request mapping: a CR (namespace, annotations, spec,
// generation) and its watch make one release request.
func TestNewRequest(t *testing.T) {
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}, Values: map[string]any{"message": "hi"}}
	base := requestMapping{watch: watches.Watch{LoadedChart: ch, DryRunOption: watches.DryRunServer}, chartDigest: "chart"}
	def := requestView{Name: "web", Namespace: "ns", Values: map[string]any{}, RollbackForce: true, DryRun: watches.DryRunServer,
		HealthDeadline: watches.DefaultHealthDeadline, Generation: 4}
	scaling := map[string]any{"enabled": true, "maxReplicas": 3}
	tests := []struct {
		name    string
		mapping func(*requestMapping)
		ns      string
		ann     map[string]string
		spec    any
		want    func(*requestView)
		wantErr string
	}{
		{name: "defaults", ns: "ns"},
		{name: "every annotation", ns: "ns", ann: map[string]string{
			AnnotationUpgradeForce: "true", AnnotationRollbackForce: "false", AnnotationUninstallWait: "True",
			AnnotationInstallNoHooks: "1", AnnotationUpgradeNoHooks: "true", AnnotationUninstallNoHooks: "true",
		}, want: func(v *requestView) {
			v.UpgradeForce, v.RollbackForce, v.UninstallWait = true, false, true
			v.InstallHooksOff, v.UpgradeHooksOff, v.UninstallHooksOff = true, true, true
		}},
		{name: "unparsable booleans are false", ns: "ns", ann: map[string]string{AnnotationUpgradeForce: "yes please"}},
		{name: "health deadline from the annotation", ns: "ns", ann: map[string]string{AnnotationHealthDeadline: " 90s "},
			want: func(v *requestView) { v.HealthDeadline = 90 * time.Second }},
		{name: "health gate off by annotation", ns: "ns", ann: map[string]string{AnnotationHealthDeadline: "0s"},
			want: func(v *requestView) { v.HealthDeadline = 0 }},
		{name: "a health deadline that is not a duration is ignored", ns: "ns", ann: map[string]string{AnnotationHealthDeadline: "soon"}},
		{name: "a negative health deadline is ignored", ns: "ns", ann: map[string]string{AnnotationHealthDeadline: "-1s"}},
		{name: "cluster-scoped CR releases into default", want: func(v *requestView) { v.Namespace = "default" }},
		{name: "the spec is the values", ns: "ns", spec: map[string]any{"message": "hello", "replicas": int64(2)},
			want: func(v *requestView) { v.Values = map[string]any{"message": "hello", "replicas": float64(2)} }},
		{name: "overrides win over the spec", ns: "ns", spec: map[string]any{"message": "hello"},
			mapping: func(m *requestMapping) { m.watch.OverrideValues = map[string]string{"message": "forced"} },
			want:    func(v *requestView) { v.Values = map[string]any{"message": "forced"} }},
		{name: "the watch's dry run and server-side apply", ns: "ns",
			mapping: func(m *requestMapping) { m.watch.DryRunOption, m.watch.ServerSideApply = watches.DryRunClient, true },
			want:    func(v *requestView) { v.DryRun, v.ServerSideApply = "client", true }},
		{name: "the operator's labels are in the digest", ns: "ns",
			mapping: func(m *requestMapping) { m.labels = map[string]string{"shard": "a"} },
			want:    func(v *requestView) { v.PostRenderDigest = labelsDigest(map[string]string{"shard": "a"}) }},
		{name: "the autoscaling field asks the post-renderer for HPAs", ns: "ns", spec: map[string]any{"message": "m", "autoscaling": scaling},
			want: func(v *requestView) {
				v.Values, v.Autoscale = map[string]any{"message": "m"}, true
				v.PostRenderDigest = joinDigests("", (&autoscale.Spec{Enabled: true, MinReplicas: 1, MaxReplicas: 3, TargetCPUUtilizationPercentage: 80}).Digest())
			}},
		{name: "a chart that owns the autoscaling field gets it as values", ns: "ns", spec: map[string]any{"autoscaling": scaling},
			mapping: func(m *requestMapping) { m.chartScales = true },
			want: func(v *requestView) {
				v.Values = map[string]any{"autoscaling": map[string]any{"enabled": true, "maxReplicas": float64(3)}}
			}},
		{name: "a spec that is not an object: the error, and a request to uninstall with", ns: "ns", spec: "text",
			want: func(v *requestView) { v.Values = nil }, wantErr: "spec is a string, not an object"},
		{name: "invalid autoscaling: the error, and a request to uninstall with", ns: "ns", spec: map[string]any{"autoscaling": map[string]any{"enabled": true}},
			want: func(v *requestView) { v.Values = nil }, wantErr: "autoscaling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			if tt.mapping != nil {
				tt.mapping(&m)
			}
			o := owner(tt.ns)
			o.SetAnnotations(tt.ann)
			o.SetGeneration(4)
			if tt.spec != nil {
				o.Object["spec"] = tt.spec
			}
			want := def
			want.Values = map[string]any{}
			if tt.want != nil {
				tt.want(&want)
			}
			q, err := m.newRequest(o)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("newRequest() error %v, want %q", err, tt.wantErr)
			}
			if got := viewOf(q); !reflect.DeepEqual(got, want) {
				t.Errorf("newRequest() =\n%+v\nwant\n%+v", got, want)
			}
			if q.Chart != ch || q.ChartDigest != "chart" {
				t.Errorf("the request's chart is not the watch's")
			}
			if pr, ok := q.PostRenderer.(ownerRenderer); !ok || pr.owner != o {
				t.Errorf("the post-renderer does not tie the objects to the CR: %#v", q.PostRenderer)
			}
			if tt.spec != nil && o.Object["spec"] == nil {
				t.Error("the CR's spec was changed")
			}
		})
	}
}

func TestFailureReason(t *testing.T) {
	tests := map[error]string{
		fmt.Errorf("x: %w", release.ErrInstallFailed):                           ReasonInstallError,
		fmt.Errorf("x: %w", release.ErrUpgradeFailed):                           ReasonUpgradeError,
		fmt.Errorf("x: %w", release.ErrUninstallFailed):                         ReasonUninstallError,
		fmt.Errorf("x: %w", release.ErrNotConverged):                            ReasonReconcileError,
		fmt.Errorf("%w: %w", release.ErrInstallFailed, release.ErrAPINotServed): ReasonAPINotServed,
		fmt.Errorf("%w: %w", release.ErrUpgradeFailed, release.ErrAPINotServed): ReasonAPINotServed,
		fmt.Errorf("%w: %w", release.ErrInstallFailed, release.ErrRulesNotHeld): ReasonRulesNotHeld,
		errors.New("api server gone"):                                           ReasonReconcileError,
	}
	for err, want := range tests {
		if got := failureReason(err); got != want {
			t.Errorf("failureReason(%v) = %s, want %s", err, got, want)
		}
	}
}

// The pods of Deployments, StatefulSets, DaemonSets and ReplicaSets carry
// the managed label (so the operator's cache holds them, for their health);
// a Job's immutable template and objects without a template are left alone.
func TestLabelPodTemplate(t *testing.T) {
	tests := []struct {
		name, obj string
		want      map[string]string // the template's labels; nil: no template
	}{
		{name: "deployment", obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {metadata: {labels: {app: d}}}}}`,
			want: map[string]string{"app": "d", ManagedLabel: "true"}},
		{name: "statefulset without template labels", obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {template: {spec: {}}}}`,
			want: map[string]string{ManagedLabel: "true"}},
		{name: "daemonset", obj: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds}, spec: {template: {metadata: {labels: {app: ds}}}}}`,
			want: map[string]string{"app": "ds", ManagedLabel: "true"}},
		{name: "job: immutable template untouched", obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {metadata: {labels: {app: j}}}}}`,
			want: map[string]string{"app": "j"}},
		{name: "a Deployment of another group", obj: `{apiVersion: example.com/v1, kind: Deployment, metadata: {name: x}, spec: {template: {metadata: {labels: {app: x}}}}}`,
			want: map[string]string{"app": "x"}},
		{name: "a configmap has no template", obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ownerRenderer{owner: owner("ns")}.Run(bytes.NewBufferString(tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(bytes.TrimPrefix(out.Bytes(), []byte("---\n")), &u.Object); err != nil {
				t.Fatal(err)
			}
			got, found, err := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if found {
					t.Fatalf("template labels %v added", got)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("template labels %v, want %v", got, tt.want)
			}
		})
	}
}

// Health events follow the failures only: a rollout in progress makes none,
// the same failures seen again make none.
// A release under watch is looked at again at its deadline, not before
// (but for the not-ready period) and not by polling.
func TestRequeueAtHealthDeadline(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		period string // the CR's reconcile period annotation, "" for none
		state  release.State
		want   time.Duration
	}{
		{name: "in sync, no period", state: release.State{Status: release.InSync}, want: 0},
		{name: "watched", state: release.State{Status: release.Watching, VerifyAt: now.Add(time.Minute)}, want: time.Minute + deadlineSlack},
		{name: "watched, a shorter period", period: "30s", state: release.State{Status: release.Watching, VerifyAt: now.Add(time.Minute)}, want: 30 * time.Second},
		{name: "watched, not ready", state: release.State{Status: release.Watching, VerifyAt: now.Add(time.Minute), NotReady: []string{"Deployment web"}}, want: notReadyRequeue},
		{name: "watched, deadline passed", state: release.State{Status: release.Watching, VerifyAt: now.Add(-time.Second)}, want: deadlineSlack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{Now: func() time.Time { return now }, Watch: watches.Watch{LoadedChart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}}})
			o := owner("ns")
			if tc.period != "" {
				o.SetAnnotations(map[string]string{AnnotationReconcilePeriod: tc.period})
			}
			if got := r.requeue(o, release.Result{State: tc.state}); got != tc.want {
				t.Errorf("requeue after %s, want %s", got, tc.want)
			}
		})
	}
}

// A rollback of an unhealthy upgrade is a Warning event of its own.
func TestReportUnhealthyRollback(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := New(Options{Recorder: rec, Watch: watches.Watch{LoadedChart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}}})
	cause := fmt.Errorf("%w: revision 2 failed: Pod web-1: CrashLoopBackOff", release.ErrUnhealthy)
	r.report(owner("ns"), release.Result{Actions: []release.Performed{
		{Action: release.ActionUpgrade},
		{Action: release.ActionRollback, Cause: cause},
		{Action: release.ActionVerify},
	}})
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 3 || !strings.HasPrefix(got[1], "Warning "+EventUnhealthyRolledBack+" ") || !strings.Contains(got[1], "CrashLoopBackOff") ||
		!strings.HasPrefix(got[2], "Normal "+EventHealthVerified+" ") {
		t.Errorf("events %q", got)
	}
}

func TestReportHealth(t *testing.T) {
	crash := health.Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "CrashLoopBackOff", Message: "container web: last terminated with exit code 1"}
	pull := health.Problem{Kind: "Pod", Namespace: "ns", Name: "web-2", Reason: "ImagePullBackOff", Message: "container web: image x:1"}
	rolling := health.Problem{Kind: "Deployment", Namespace: "ns", Name: "web", Reason: health.ReasonNotReady, Message: "InProgress"}
	tests := []struct {
		name        string
		before, now []health.Problem
		want        []string // events, "Type Reason"
	}{
		{name: "a rollout in progress", now: []health.Problem{rolling}},
		{name: "a pod starts crashing", before: []health.Problem{rolling}, now: []health.Problem{crash, rolling},
			want: []string{"Warning " + ReasonObjectsUnhealthy}},
		{name: "the same failure again", before: []health.Problem{crash}, now: []health.Problem{crash}},
		{name: "another failure", before: []health.Problem{crash}, now: []health.Problem{crash, pull},
			want: []string{"Warning " + ReasonObjectsUnhealthy}},
		{name: "recovering, still rolling out", before: []health.Problem{crash}, now: []health.Problem{rolling},
			want: []string{"Normal " + ReasonObjectsHealthy}},
		{name: "ready", before: []health.Problem{rolling}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := New(Options{Recorder: rec, Watch: watches.Watch{LoadedChart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}}})
			r.reportHealth(owner("ns"), health.Summarize(tt.before), health.Summarize(tt.now))
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				typ, rest, _ := strings.Cut(e, " ")
				reason, _, _ := strings.Cut(rest, " ")
				got = append(got, typ+" "+reason)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("events %v, want %v", got, tt.want)
			}
		})
	}
}
