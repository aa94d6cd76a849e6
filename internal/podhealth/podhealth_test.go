package podhealth

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDescribe(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	tests := []struct {
		name     string
		pod      corev1.Pod
		want     []string // substrings, one per problem
		crashing string
	}{
		{name: "running and ready", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running, Ready: true}}}}},
		{name: "image pull", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "127.0.0.1:5000/nope:v1",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}}},
			want: []string{"container app cannot pull image 127.0.0.1:5000/nope:v1 (ImagePullBackOff: not found)"}},
		{name: "crash loop", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error"}}}}}},
			want: []string{"container manager is in CrashLoopBackOff after 4 restarts, last exit code 127 (Error)"}, crashing: "manager"},
		{name: "not ready", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running}}}},
			want: []string{"container app is running but not ready (its readiness probe fails)"}},
		{name: "unschedulable", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/1 nodes are available"}}}},
			want: []string{"not scheduled: 0/1 nodes are available"}},
		{name: "bad config", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "x" not found`}}}}}},
			want: []string{`container app cannot start (CreateContainerConfigError: secret "x" not found)`}},
		{name: "still creating", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}},
		{name: "init container failed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "util",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}},
			want: []string{"container util exited with code 1 (Error)"}, crashing: "util"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Describe(&tt.pod)
			if len(got) != len(tt.want) {
				t.Fatalf("Describe() = %+v, want %d problems", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Message, w) {
					t.Errorf("problem %d = %q, want %q", i, got[i].Message, w)
				}
			}
			if len(got) > 0 && got[0].Crashing != tt.crashing {
				t.Errorf("Crashing = %q, want %q", got[0].Crashing, tt.crashing)
			}
		})
	}
}
