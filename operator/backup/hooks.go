package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hookPhase is the prefix of Velero's hook annotations for one moment.
type hookPhase string

const (
	preBackup   hookPhase = "pre.hook.backup.velero.io"
	postBackup  hookPhase = "post.hook.backup.velero.io"
	postRestore hookPhase = "post.hook.restore.velero.io"
)

// Keys after the phase prefix, as Velero names them.
const (
	hookCommand    = "/command"
	hookContainer  = "/container"
	hookTimeoutKey = "/timeout"
	hookOnError    = "/on-error"
	// post-restore hooks name their timeout exec-timeout.
	hookExecTimeout = "/exec-timeout"
)

// hook is one pod's command for one phase.
type hook struct {
	pod, container string
	command        []string
	timeout        time.Duration
	// continueOnError lets the backup go on when the hook fails.
	continueOnError bool
}

// parseHook reads a pod's annotations for phase; nil when it has no hook.
func parseHook(pod *corev1.Pod, phase hookPhase, defTimeout time.Duration) (*hook, error) {
	ann := pod.Annotations
	raw := ann[string(phase)+hookCommand]
	if raw == "" {
		return nil, nil
	}
	h := &hook{pod: pod.Name, container: ann[string(phase)+hookContainer], timeout: defTimeout}
	if strings.HasPrefix(strings.TrimSpace(raw), "[") {
		if err := json.Unmarshal([]byte(raw), &h.command); err != nil {
			return nil, fmt.Errorf("pod %s: annotation %s%s is not a JSON list of strings: %w", pod.Name, phase, hookCommand, err)
		}
	} else {
		h.command = []string{raw}
	}
	if h.container == "" && len(pod.Spec.Containers) > 0 {
		h.container = pod.Spec.Containers[0].Name
	}
	for _, key := range []string{hookTimeoutKey, hookExecTimeout} {
		if v := ann[string(phase)+key]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("pod %s: annotation %s%s: %w", pod.Name, phase, key, err)
			}
			h.timeout = d
		}
	}
	switch v := ann[string(phase)+hookOnError]; v {
	case "", "Fail":
	case "Continue":
		h.continueOnError = true
	default:
		return nil, fmt.Errorf("pod %s: annotation %s%s is %q, want Fail or Continue", pod.Name, phase, hookOnError, v)
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

// runHooks runs the hooks of phase in pods one after another. A hook that
// fails, or outlasts its timeout, fails them unless its on-error says
// Continue; the error names the pod, the container and the output.
func (o *Options) runHooks(ctx context.Context, pods []corev1.Pod, phase hookPhase, defTimeout time.Duration) error {
	for i := range pods {
		h, err := parseHook(&pods[i], phase, defTimeout)
		if err != nil {
			return err
		}
		if h == nil {
			continue
		}
		out, err := o.exec(ctx, pods[i].Namespace, h)
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

// exec runs a hook through pods/exec within its timeout.
func (o *Options) exec(ctx context.Context, namespace string, h *hook) (string, error) {
	if o.Config == nil {
		return "", fmt.Errorf("no client configuration for pods/exec")
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(h.pod).SubResource("exec").
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
