package doctor

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCRCheck(t *testing.T) {
	cond := func(typ, status, reason, msg string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
	}
	tests := []struct {
		name     string
		conds    []any
		severity string
		message  string
	}{
		{name: "never reconciled", severity: "warn", message: "no status conditions"},
		{name: "irreconcilable wins", conds: []any{cond("ReleaseFailed", "True", "InstallError", "x"), cond("Irreconcilable", "True", "InvalidValues", "spec.replicas: must be >= 1")},
			severity: "fail", message: "Irreconcilable: InvalidValues: spec.replicas: must be >= 1"},
		{name: "release failed", conds: []any{cond("Deployed", "True", "InstallSuccessful", ""), cond("ReleaseFailed", "True", "UpgradeError", "timed out")},
			severity: "fail", message: "ReleaseFailed: UpgradeError: timed out"},
		{name: "deployed not ready", conds: []any{cond("Deployed", "True", "InstallSuccessful", ""), cond("Ready", "False", "ObjectsNotReady", "Deployment web: 0/1 available")},
			severity: "warn", message: "Deployed, not Ready: ObjectsNotReady Deployment web: 0/1 available"},
		{name: "deployed and ready", conds: []any{cond("Deployed", "True", "UpgradeSuccessful", "release w upgraded"), cond("Ready", "True", "ObjectsReady", "")},
			severity: "pass", message: "Deployed: UpgradeSuccessful: release w upgraded"},
		{name: "initialized only", conds: []any{cond("Initialized", "True", "", "")}, severity: "warn", message: "not Deployed yet (conditions Initialized)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{"kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns"}}}
			if tt.conds != nil {
				cr.Object["status"] = map[string]any{"conditions": tt.conds}
			}
			c := crCheck(cr)
			if string(c.Severity) != tt.severity || !strings.Contains(c.Message, tt.message) || c.Object != "ns/widget/w" {
				t.Errorf("crCheck = %+v, want %s %q", c, tt.severity, tt.message)
			}
		})
	}
}

func TestPodsAndDeploymentChecks(t *testing.T) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ns"}}
	pod := func(phase corev1.PodPhase, ready bool, waiting string, restarts int32) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1"}, Status: corev1.PodStatus{Phase: phase}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		cs := corev1.ContainerStatus{Name: "manager", RestartCount: restarts}
		if waiting != "" {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting, Message: "back-off restarting"}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	tests := []struct {
		name     string
		pods     []corev1.Pod
		severity string
		message  string
	}{
		{name: "none", severity: "fail", message: "no pods"},
		{name: "healthy", pods: []corev1.Pod{pod(corev1.PodRunning, true, "", 0)}, severity: "pass", message: "1 pods Running and Ready"},
		{name: "restarted", pods: []corev1.Pod{pod(corev1.PodRunning, true, "", 3)}, severity: "warn", message: "3 restarts"},
		{name: "crash loop", pods: []corev1.Pod{pod(corev1.PodRunning, false, "CrashLoopBackOff", 5)}, severity: "fail", message: "pod op-1: container manager is in CrashLoopBackOff after 5 restarts"},
		{name: "pending", pods: []corev1.Pod{pod(corev1.PodPending, false, "ImagePullBackOff", 0)}, severity: "fail", message: "ImagePullBackOff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := podsCheck(dep, tt.pods)
			if string(c.Severity) != tt.severity || !strings.Contains(c.Message, tt.message) {
				t.Errorf("podsCheck = %+v, want %s %q", c, tt.severity, tt.message)
			}
		})
	}

	dep.Status = appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Message: `ReplicaSet "op-1" has timed out progressing`}}}
	if c := deploymentCheck(dep); c.Severity != Fail || !strings.Contains(c.Message, "not progressing: ReplicaSet") {
		t.Errorf("deploymentCheck = %+v", c)
	}
	dep.Status = appsv1.DeploymentStatus{AvailableReplicas: 1, ReadyReplicas: 1, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
	if c := deploymentCheck(dep); c.Severity != Pass || c.Message != "Available, 1/1 replicas ready" {
		t.Errorf("deploymentCheck = %+v", c)
	}
}

func TestFlowRule(t *testing.T) {
	got := flowRule([]byte(`{"verbs":["get","create"],"apiGroups":[""],"resources":["configmaps"],"resourceNames":["lock"]}`))
	want := `{apiGroups: [""], resources: [configmaps], resourceNames: [lock], verbs: [get, create]}`
	if got != want {
		t.Errorf("flowRule = %s, want %s", got, want)
	}
}
