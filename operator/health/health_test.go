package health

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// obj parses a YAML object.
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// pod is a pod named web-1 in ns with the given status.
func pod(st corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"}, Status: st}
}

// waiting is a container status waiting for reason.
func waiting(name, image, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func TestPod(t *testing.T) {
	crashing := waiting("web", "web:1", "CrashLoopBackOff", "back-off 40s restarting failed container=web pod=web-1")
	crashing.RestartCount = 4
	crashing.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want *Problem
	}{{
		name: "crash loop: last termination and exit code, not the kubelet's back-off message",
		pod:  pod(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{crashing}}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "CrashLoopBackOff", Message: "container web: last terminated with exit code 137 (OOMKilled)"},
	}, {
		name: "image pull back-off names the image",
		pod: pod(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("web", "registry.invalid/web:nope", "ImagePullBackOff", `Back-off pulling image "registry.invalid/web:nope"`)}}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "ImagePullBackOff", Message: "container web: image registry.invalid/web:nope"},
	}, {
		name: "an init container comes first",
		pod: pod(corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{waiting("migrate", "db:2", "ErrImagePull", "not found")},
			ContainerStatuses:     []corev1.ContainerStatus{waiting("web", "web:1", "PodInitializing", "")}}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "ErrImagePull", Message: "container migrate: image db:2"},
	}, {
		name: "a configuration error keeps the kubelet's message",
		pod: pod(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("web", "web:1", "CreateContainerConfigError", `secret "db" not found`)}}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "CreateContainerConfigError", Message: `container web: secret "db" not found`},
	}, {
		name: "a container being created is no problem",
		pod:  pod(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("web", "web:1", "ContainerCreating", "")}}),
	}, {
		name: "running and ready",
		pod: pod(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}),
	}, {
		name: "unschedulable",
		pod: pod(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}}}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: ReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."},
	}, {
		name: "evicted",
		pod:  pod(corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}),
		want: &Problem{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: ReasonPodFailed, Message: "Evicted The node was low on resource: memory."},
	}, {
		name: "a pod being deleted is not reported",
		pod: func() *corev1.Pod {
			p := pod(corev1.PodStatus{Phase: corev1.PodFailed})
			p.DeletionTimestamp = &metav1.Time{}
			return p
		}(),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := Pod(tt.pod)
			if tt.want == nil {
				if bad {
					t.Fatalf("want no problem, got %+v", got)
				}
				return
			}
			if !bad || got != *tt.want {
				t.Fatalf("got %+v (%v), want %+v", got, bad, *tt.want)
			}
			// The same pod seen through the object path gives the same.
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: m}
			u.SetAPIVersion("v1")
			u.SetKind("Pod")
			if got, _ := Object(u); got != *tt.want {
				t.Errorf("Object: got %+v, want %+v", got, *tt.want)
			}
		})
	}
}

func TestObject(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want *Problem
	}{{
		name: "rollout past its progress deadline",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, generation: 2},
  spec: {replicas: 1, progressDeadlineSeconds: 60},
  status: {observedGeneration: 2, replicas: 1, conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: 'ReplicaSet "web-5d" has timed out progressing.'}]}}`,
		want: &Problem{Kind: "Deployment", Namespace: "ns", Name: "web", Reason: ReasonProgressDeadlineExceeded, Message: `ReplicaSet "web-5d" has timed out progressing.`},
	}, {
		name: "available deployment",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, generation: 1},
  spec: {replicas: 1},
  status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1,
    conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]}}`,
	}, {
		name: "deployment still rolling out",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, generation: 1},
  spec: {replicas: 2},
  status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1}}`,
		want: &Problem{Kind: "Deployment", Namespace: "ns", Name: "web", Reason: ReasonNotReady, Message: "InProgress: Available: 1/2"},
	}, {
		name: "claim pending",
		obj:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: ns}, status: {phase: Pending}}`,
		want: &Problem{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data", Reason: ReasonClaimPending, Message: "phase Pending"},
	}, {
		name: "claim bound",
		obj:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: ns}, status: {phase: Bound}}`,
	}, {
		name: "job failed",
		obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: ns},
  status: {startTime: "2026-01-01T00:00:00Z", failed: 6, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]}}`,
		want: &Problem{Kind: "Job", Namespace: "ns", Name: "migrate", Reason: ReasonJobFailed, Message: "BackoffLimitExceeded: Job has reached the specified backoff limit"},
	}, {
		name: "job running",
		obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: ns}, status: {startTime: "2026-01-01T00:00:00Z", active: 1}}`,
	}, {
		name: "a kind kstatus says failed",
		obj: `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: ns, generation: 1},
  status: {observedGeneration: 1, conditions: [{type: Stalled, status: "True", reason: Broken, message: widget broke}]}}`,
		want: &Problem{Kind: "Widget", Namespace: "ns", Name: "w", Reason: ReasonFailed, Message: "widget broke"},
	}, {
		name: "a configmap is always healthy",
		obj:  `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: b}}`,
	}, {
		name: "a cluster-scoped object has no namespace",
		obj:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Lost}}`,
		want: &Problem{Kind: "PersistentVolumeClaim", Name: "data", Reason: ReasonClaimPending, Message: "phase Lost"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := Object(obj(t, tt.obj))
			switch {
			case tt.want == nil && bad:
				t.Fatalf("want no problem, got %+v", got)
			case tt.want != nil && (!bad || got != *tt.want):
				t.Fatalf("got %+v (%v), want %+v", got, bad, *tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	p := func(kind, name, reason string) Problem {
		return Problem{Kind: kind, Namespace: "ns", Name: name, Reason: reason}
	}
	// many is n crash-looping pods, web-n first.
	many := func(n int) []Problem {
		var out []Problem
		for i := n; i > 0; i-- {
			out = append(out, p("Pod", fmt.Sprintf("web-%02d", i), "CrashLoopBackOff"))
		}
		return out
	}
	tests := []struct {
		name     string
		problems []Problem
		want     *Summary
	}{{
		name: "nothing wrong: no summary, so the status has no health field",
	}, {
		name:     "failures before what is only not ready, then by kind and name",
		problems: []Problem{p("Deployment", "web", ReasonNotReady), p("Pod", "web-2", "ImagePullBackOff"), p("PersistentVolumeClaim", "data", ReasonClaimPending), p("Pod", "web-1", "CrashLoopBackOff")},
		want: &Summary{Unhealthy: 4, Problems: []Problem{
			p("PersistentVolumeClaim", "data", ReasonClaimPending), p("Pod", "web-1", "CrashLoopBackOff"), p("Pod", "web-2", "ImagePullBackOff"), p("Deployment", "web", ReasonNotReady)}},
	}, {
		name:     "the same problem twice counts once",
		problems: []Problem{p("Pod", "web-1", "CrashLoopBackOff"), p("Pod", "web-1", "CrashLoopBackOff")},
		want:     &Summary{Unhealthy: 1, Problems: []Problem{p("Pod", "web-1", "CrashLoopBackOff")}},
	}, {
		name:     "bounded: all counted, MaxProblems listed",
		problems: many(25),
		want:     &Summary{Unhealthy: 25, Problems: reversed(many(MaxProblems))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Problem(nil), tt.problems...)
			got := Summarize(tt.problems)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.problems) {
				t.Error("Summarize changed its input")
			}
		})
	}
}

func TestPodSelector(t *testing.T) {
	tests := []struct {
		name, obj, want string
		wantErr         bool
	}{
		{name: "match labels and expressions", obj: `{kind: Deployment, metadata: {name: web}, spec: {selector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [front]}]}}}`, want: "app=web,tier in (front)"},
		{name: "no selector", obj: `{kind: Deployment, metadata: {name: web}, spec: {}}`, wantErr: true},
		{name: "an empty selector would match every pod", obj: `{kind: Deployment, metadata: {name: web}, spec: {selector: {}}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := PodSelector(obj(t, tt.obj))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %v", sel)
				}
				return
			}
			if err != nil || sel.String() != tt.want {
				t.Fatalf("got %v, %v; want %s", sel, err, tt.want)
			}
		})
	}
}

func reversed(ps []Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	for i := len(ps) - 1; i >= 0; i-- {
		out = append(out, ps[i])
	}
	return out
}
