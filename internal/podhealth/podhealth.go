package podhealth

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LogLines is how many of a crashing container's last log lines a problem quotes.
const LogLines = 5

// Problems describes the pods matching selector in namespace that are not
// running and ready; a crashing container's problem ends with its last log
// lines. It answers "no pods" when there are none.
func Problems(ctx context.Context, cs kubernetes.Interface, namespace string, selector *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return err.Error()
	}
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	if len(pods.Items) == 0 {
		return "no pods"
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, problem := range Describe(p) {
			line := "pod " + p.Name + ": " + problem.Message
			if problem.Crashing != "" {
				line += lastLogs(ctx, cs, p, problem.Crashing)
			}
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return "pods are running and ready"
	}
	return strings.Join(out, "; ")
}

// Problem is one reason a pod is not running and ready.
type Problem struct {
	Message string
	// Crashing names the container whose logs explain the problem.
	Crashing string
}

// Describe lists why a pod is not running and ready: unschedulable, an
// image that cannot be pulled (with its reference), a container that
// crashes (with its last exit), a failing readiness probe.
func Describe(p *corev1.Pod) []Problem {
	var out []Problem
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			out = append(out, Problem{Message: "not scheduled: " + c.Message})
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if pr, ok := containerProblem(cs); ok {
			out = append(out, pr)
		}
	}
	if len(out) == 0 && p.Status.Phase == corev1.PodRunning && !Ready(p) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !cs.Ready {
				out = append(out, Problem{Message: fmt.Sprintf("container %s is running but not ready (its readiness probe fails)", cs.Name)})
			}
		}
	}
	if len(out) == 0 && p.Status.Phase == corev1.PodFailed {
		out = append(out, Problem{Message: "failed: " + firstOf(p.Status.Message, p.Status.Reason, "no reason given")})
	}
	return out
}

func containerProblem(cs corev1.ContainerStatus) (Problem, bool) {
	w := cs.State.Waiting
	if w == nil {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return Problem{Message: fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, exitWhy(t)), Crashing: cs.Name}, true
		}
		return Problem{}, false
	}
	switch w.Reason {
	case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
		return Problem{Message: fmt.Sprintf("container %s cannot pull image %s (%s: %s)", cs.Name, cs.Image, w.Reason, w.Message)}, true
	case "CrashLoopBackOff":
		msg := fmt.Sprintf("container %s is in CrashLoopBackOff after %d restarts", cs.Name, cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			msg += fmt.Sprintf(", last exit code %d (%s)", t.ExitCode, exitWhy(t))
		}
		return Problem{Message: msg, Crashing: cs.Name}, true
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return Problem{Message: fmt.Sprintf("container %s cannot start (%s: %s)", cs.Name, w.Reason, w.Message)}, true
	case "", "ContainerCreating", "PodInitializing":
		return Problem{}, false
	}
	return Problem{Message: fmt.Sprintf("container %s is waiting: %s %s", cs.Name, w.Reason, w.Message)}, true
}

// lastLogs quotes the last lines the container printed before it exited.
func lastLogs(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, container string) string {
	lines := int64(LogLines)
	for _, previous := range []bool{true, false} {
		data, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, TailLines: &lines, Previous: previous}).DoRaw(ctx)
		if err == nil && len(strings.TrimSpace(string(data))) > 0 {
			return "; its last log lines: " + strings.Join(strings.Split(strings.TrimSpace(string(data)), "\n"), " | ")
		}
	}
	return ""
}

// Ready says whether the pod's Ready condition is true.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exitWhy is a termination's reason and message: for a container that
// could not start (a wrong entrypoint) the message says why.
func exitWhy(t *corev1.ContainerStateTerminated) string {
	msg := strings.TrimSpace(t.Message)
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	switch {
	case t.Reason != "" && msg != "":
		return t.Reason + ": " + msg
	case t.Reason != "":
		return t.Reason
	}
	return firstOf(msg, "no reason given")
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
