package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Reasons a Problem gives beside the kubelet's container reasons
// (CrashLoopBackOff, ImagePullBackOff, ErrImagePull, CreateContainerConfigError...).
const (
	// ReasonProgressDeadlineExceeded: a Deployment's rollout made no progress
	// within spec.progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonJobFailed: a Job reached its backoff limit or deadline.
	ReasonJobFailed = "JobFailed"
	// ReasonClaimPending: a PersistentVolumeClaim is not bound.
	ReasonClaimPending = "ClaimPending"
	// ReasonUnschedulable: the scheduler found no node for a pod.
	ReasonUnschedulable = "Unschedulable"
	// ReasonPodFailed: a pod ended in phase Failed (evicted, for example).
	ReasonPodFailed = "PodFailed"
	// ReasonFailed: kstatus says the object failed, for a kind this package
	// knows nothing more about.
	ReasonFailed = "Failed"
	// ReasonNotReady: not ready yet (kstatus InProgress), no failure known.
	ReasonNotReady = "NotReady"
)

// MaxProblems bounds the problems a Summary lists: a release of many
// crash-looping pods must not make its CR's status grow without limit.
const MaxProblems = 10

// Problem is one object that is not healthy.
type Problem struct {
	// Kind, Namespace and Name identify the object.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Reason is a CamelCase word: the kubelet's waiting reason for a
	// container, or one of this package's reasons.
	Reason string `json:"reason"`
	// Message says what is wrong for people: the container, its last
	// termination and exit code, the image that cannot be pulled...
	Message string `json:"message,omitempty"`
}

func (p Problem) String() string {
	id := p.Kind + " " + p.Name
	if p.Namespace != "" {
		id = p.Kind + " " + p.Namespace + "/" + p.Name
	}
	if p.Message == "" {
		return id + ": " + p.Reason
	}
	return id + ": " + p.Reason + ": " + p.Message
}

// Summary is the health of a release's objects, bounded in size.
type Summary struct {
	// Unhealthy counts every object not healthy; Problems lists at most
	// MaxProblems of them, the most severe first.
	Unhealthy int       `json:"unhealthy"`
	Problems  []Problem `json:"problems,omitempty"`
}

// Summarize orders problems, the failures before what is only not ready
// yet, and keeps MaxProblems of them. The order is stable, so that the same
// problems give the same summary and the status is not rewritten.
func Summarize(problems []Problem) *Summary {
	if len(problems) == 0 {
		return nil
	}
	sorted := slices.Clone(problems)
	slices.SortFunc(sorted, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(severity(a), severity(b)),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
	sorted = slices.Compact(sorted)
	s := &Summary{Unhealthy: len(sorted), Problems: sorted}
	if len(sorted) > MaxProblems {
		s.Problems = sorted[:MaxProblems:MaxProblems]
	}
	return s
}

// severity puts what is only not ready yet after everything else.
func severity(p Problem) int {
	if p.Reason == ReasonNotReady {
		return 1
	}
	return 0
}

// Object returns the problem of one object of a release, if it is not
// healthy. Pods of a workload are looked at apart (Pod): a Deployment's own
// status says little more than "not available".
func Object(u *unstructured.Unstructured) (Problem, bool) {
	p := Problem{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	switch u.GroupVersionKind().GroupKind().String() {
	case "Pod":
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod); err == nil {
			return Pod(&pod)
		}
	case "PersistentVolumeClaim":
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != string(corev1.ClaimBound) {
			if phase == "" {
				phase = "unknown"
			}
			p.Reason, p.Message = ReasonClaimPending, "phase "+phase
			return p, true
		}
		return Problem{}, false
	case "Deployment.apps":
		if c, ok := condition(u, "Progressing"); ok && c.reason == ReasonProgressDeadlineExceeded {
			p.Reason, p.Message = ReasonProgressDeadlineExceeded, c.message
			return p, true
		}
	case "Job.batch":
		if c, ok := condition(u, "Failed"); ok && c.status == string(corev1.ConditionTrue) {
			p.Reason, p.Message = ReasonJobFailed, strings.TrimSpace(c.reason+": "+c.message)
			return p, true
		}
	}
	res, err := status.Compute(u)
	switch {
	case err != nil:
		p.Reason, p.Message = ReasonNotReady, err.Error()
	case res.Status == status.CurrentStatus:
		return Problem{}, false
	case res.Status == status.FailedStatus:
		p.Reason, p.Message = ReasonFailed, res.Message
	default:
		p.Reason, p.Message = ReasonNotReady, fmt.Sprintf("%s: %s", res.Status, res.Message)
	}
	return p, true
}

type cond struct{ status, reason, message string }

func condition(u *unstructured.Unstructured, typ string) (cond, bool) {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return cond{status: str("status"), reason: str("reason"), message: str("message")}, true
	}
	return cond{}, false
}

// Workload kinds whose pods Pods may look at.
var workloads = map[string]bool{
	"Deployment.apps": true, "StatefulSet.apps": true, "DaemonSet.apps": true, "ReplicaSet.apps": true,
}

// IsWorkload says whether the object's pods tell more about its health.
func IsWorkload(u *unstructured.Unstructured) bool {
	return workloads[u.GroupVersionKind().GroupKind().String()]
}

// Pod returns a pod's problem: the first container (init containers
// first) that waits for a reason other than starting, with its last
// termination; a pod no node can take; a pod that failed. A pod that is
// only starting has none: its workload's readiness says so.
func Pod(pod *corev1.Pod) (Problem, bool) {
	p := Problem{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
	if pod.DeletionTimestamp != nil {
		return Problem{}, false
	}
	if pod.Status.Phase == corev1.PodFailed {
		p.Reason = ReasonPodFailed
		p.Message = strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
		return p, true
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil || !waitingProblem[w.Reason] {
			continue
		}
		p.Reason = w.Reason
		p.Message = containerMessage(cs, w)
		return p, true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			p.Reason, p.Message = ReasonUnschedulable, c.Message
			return p, true
		}
	}
	return Problem{}, false
}

// waitingProblem are the kubelet's waiting reasons that need someone to
// act; ContainerCreating and PodInitializing only take time.
var waitingProblem = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"PreCreateHookError":         true,
	"PostStartHookError":         true,
}

// containerMessage names the container and what the user needs to fix it:
// the image for a pull failure, the last termination for a crash loop. It
// leaves out the kubelet's message for a crash loop ("back-off 40s
// restarting..."): it changes with every back-off step and would rewrite
// the status each time for nothing new; restart counts likewise.
func containerMessage(cs corev1.ContainerStatus, w *corev1.ContainerStateWaiting) string {
	msg := "container " + cs.Name
	switch {
	case strings.Contains(w.Reason, "Image"):
		msg += ": image " + cs.Image
	case w.Reason == "CrashLoopBackOff":
		if t := cs.LastTerminationState.Terminated; t != nil {
			msg += fmt.Sprintf(": last terminated with exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
		}
	default:
		if w.Message != "" {
			msg += ": " + w.Message
		}
	}
	return truncate(msg)
}

// truncate keeps one problem's message short: the status holds several.
func truncate(s string) string {
	const max = 512
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// PodSelector is the selector of a workload's pods, from its spec.selector.
func PodSelector(u *unstructured.Unstructured) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return nil, fmt.Errorf("%s %s/%s has no spec.selector", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, fmt.Errorf("reading spec.selector of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("reading spec.selector of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	if sel.Empty() {
		// An empty selector would match every pod of the namespace.
		return nil, fmt.Errorf("%s %s/%s has an empty spec.selector", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	return sel, nil
}
