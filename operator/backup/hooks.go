package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Velero's phases, from the contract in package api (package rbac reads
// the same to grant pods/exec only to charts whose pods carry hooks).
const (
	preBackup   = api.PreBackup
	postBackup  = api.PostBackup
	postRestore = api.PostRestore
)

// hook is one pod's command for one phase.
type hook struct {
	namespace, pod, container string
	command                   []string
	timeout                   time.Duration
	// continueOnError lets the backup go on when the hook fails.
	continueOnError bool
}

// parseHook reads a pod's annotations for phase; nil when it has no hook.
func parseHook(pod *corev1.Pod, phase api.HookPhase, defTimeout time.Duration) (*hook, error) {
	ann := pod.Annotations
	raw := ann[phase.CommandAnnotation()]
	if raw == "" {
		return nil, nil
	}
	h := &hook{namespace: pod.Namespace, pod: pod.Name, container: ann[phase.Key(api.HookContainer)], timeout: defTimeout}
	if strings.HasPrefix(strings.TrimSpace(raw), "[") {
		if err := json.Unmarshal([]byte(raw), &h.command); err != nil {
			return nil, fmt.Errorf("pod %s: annotation %s is not a JSON list of strings: %w", pod.Name, phase.CommandAnnotation(), err)
		}
	} else {
		h.command = []string{raw}
	}
	if h.container == "" && len(pod.Spec.Containers) > 0 {
		h.container = pod.Spec.Containers[0].Name
	}
	for _, key := range []string{api.HookTimeout, api.HookExecTimeout} {
		if v := ann[phase.Key(key)]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("pod %s: annotation %s: %w", pod.Name, phase.Key(key), err)
			}
			h.timeout = d
		}
	}
	switch v := ann[phase.Key(api.HookOnError)]; v {
	case "", "Fail":
	case "Continue":
		h.continueOnError = true
	default:
		return nil, fmt.Errorf("pod %s: annotation %s is %q, want Fail or Continue", pod.Name, phase.Key(api.HookOnError), v)
	}
	return h, nil
}

// hookPods are the running pods of a release: those with its instance
// label (what charts put on their workloads' pods).
func (o *Options) hookPods(ctx context.Context, namespace, release string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := o.Reader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{instanceLabel: release}); err != nil {
		return nil, fmt.Errorf("listing the pods of release %s: %w", release, err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// ErrHookNotPermitted is wrapped by the error of hooks the operator may
// not run: it holds no pods/exec in their namespace. chartpilot grants
// pods/exec only when a chart's templates or values show a hook annotation,
// or its watches.yaml entry sets backupHooks (hooks that come from a
// custom resource's values).
var ErrHookNotPermitted = errors.New("the operator may not run commands in pods (pods/exec)")

// hookReason is the status reason of a failure of runHooks.
func hookReason(err error) string {
	if errors.Is(err, ErrHookNotPermitted) {
		return ReasonHookNotPermitted
	}
	return ReasonHookFailed
}

// runHooks runs the hooks of phase in pods one after another. Before any
// runs, every hook is read and the operator's right to run them checked: a
// malformed annotation or a missing pods/exec runs none. A hook that
// fails, or outlasts its timeout, fails them unless its on-error says
// Continue; the error names the pod, the container and the output.
func (o *Options) runHooks(ctx context.Context, pods []corev1.Pod, phase api.HookPhase, defTimeout time.Duration) error {
	hooks, err := parseHooks(pods, phase, defTimeout)
	if err != nil || len(hooks) == 0 {
		return err
	}
	if err := o.mayExec(ctx, hooks[0], phase); err != nil {
		return err
	}
	for _, h := range hooks {
		out, err := o.exec(ctx, h)
		if err == nil {
			o.Log.V(1).Info("hook ran", "phase", phase, "pod", h.pod, "container", h.container)
			continue
		}
		err = fmt.Errorf("%s hook in pod %s, container %s: %w; output: %q", phase, h.pod, h.container, err, tail(out, 512))
		if !h.continueOnError {
			return err
		}
		o.Log.Info("hook failed, going on (on-error: Continue)", "error", err.Error())
	}
	return nil
}

// parseHooks reads the hooks of phase that pods carry.
func parseHooks(pods []corev1.Pod, phase api.HookPhase, defTimeout time.Duration) ([]*hook, error) {
	var out []*hook
	for i := range pods {
		h, err := parseHook(&pods[i], phase, defTimeout)
		if err != nil {
			return nil, err
		}
		if h != nil {
			out = append(out, h)
		}
	}
	return out, nil
}

// mayExec asks the API server whether the operator may run h (each of
// api.HookExecVerbs on pods/exec in its namespace); the error of a refusal
// wraps ErrHookNotPermitted and says how to grant it.
func (o *Options) mayExec(ctx context.Context, h *hook, phase api.HookPhase) error {
	cs, err := o.clientset()
	if err != nil {
		return err
	}
	for _, verb := range api.HookExecVerbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: h.namespace, Verb: verb, Resource: "pods", Subresource: "exec"}}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("checking that the operator may run hooks (pods/exec %s) in namespace %s: %w", verb, h.namespace, err)
		}
		if !got.Status.Allowed {
			return fmt.Errorf("pod %s carries %s: %w (%s) in namespace %s; chartpilot grants it only when the chart's templates or values show a hook annotation: for hooks set through a custom resource's values, set backupHooks: true on the kind's entry in watches.yaml, run chartpilot generate and redeploy the operator",
				h.pod, phase.CommandAnnotation(), ErrHookNotPermitted, verb, h.namespace)
		}
	}
	return nil
}

// clientset reaches the API server with the operator's configuration.
func (o *Options) clientset() (kubernetes.Interface, error) {
	if o.Config == nil {
		return nil, fmt.Errorf("no client configuration for pods/exec")
	}
	return kubernetes.NewForConfig(o.Config)
}

// exec runs a hook through pods/exec within its timeout.
func (o *Options) exec(ctx context.Context, h *hook) (string, error) {
	cs, err := o.clientset()
	if err != nil {
		return "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(h.namespace).Name(h.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: h.container, Command: h.command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(o.Config, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(o.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var out lockedBuffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("timed out after %s", h.timeout)
	}
	return out.String(), err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// lockedBuffer takes stdout and stderr written from two goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
