package backupctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Options say where and how to follow.
type Options struct {
	// Config reaches the cluster. Required.
	Config *rest.Config
	// Namespace of the CR and of the backup or restore. Required.
	Namespace string
	// Resource names the watched kind as kubectl would: "hello",
	// "hellos", "hellos.charts.example.com" or "Hello". Required.
	Resource string
	// Name of the backup or restore object (default: derived, with the time).
	Name string
	// Timeout bounds the wait for the end (default 30m); 0 < Timeout.
	Timeout time.Duration
	// NoWait returns once the object is created.
	NoWait bool
	// Out receives the progress (default io.Discard).
	Out io.Writer
	// now is the clock, for names.
	now func() time.Time
}

func (o *Options) defaults() error {
	if o.Config == nil || o.Namespace == "" || o.Resource == "" {
		return errors.New("backupctl: Config, Namespace and Resource are required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.now == nil {
		o.now = time.Now
	}
	return nil
}

// ErrFailed is wrapped by the error of a backup or restore that ended Failed.
var ErrFailed = errors.New("failed")

// Backup creates a <Kind>Backup of the CR source and follows it.
func Backup(ctx context.Context, opts Options, spec api.BackupSpec) (*unstructured.Unstructured, error) {
	return create(ctx, opts, api.BackupKind, spec.Source, &spec)
}

// Restore creates a <Kind>Restore of a backup and follows it.
func Restore(ctx context.Context, opts Options, spec api.RestoreSpec) (*unstructured.Unstructured, error) {
	return create(ctx, opts, api.RestoreKind, spec.BackupName+"-restore", &spec)
}

// create resolves the watched kind, names the object after prefix and the
// time unless opts names it, and runs it.
func create(ctx context.Context, opts Options, kind func(schema.GroupVersionKind) schema.GroupVersionKind, prefix string, spec any) (*unstructured.Unstructured, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	watched, err := resolve(opts.Config, opts.Resource)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("%s-%s", prefix, opts.now().UTC().Format("20060102-150405"))
	}
	return run(ctx, opts, kind(watched), spec)
}

// resolve maps what the user typed to a served kind.
func resolve(cfg *rest.Config, resource string) (schema.GroupVersionKind, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvr, _ := schema.ParseResourceArg(resource)
	if gvr == nil {
		gvr = &schema.GroupVersionResource{}
	}
	gr := schema.ParseGroupResource(resource)
	var gvk schema.GroupVersionKind
	if gvr.Resource != "" {
		gvk, err = mapper.KindFor(*gvr)
	}
	if gvr.Resource == "" || err != nil {
		gvk, err = mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil {
		return gvk, fmt.Errorf("the cluster serves no kind %q: %w", resource, err)
	}
	return gvk, nil
}

// run creates the object and, unless NoWait, prints its progress until
// it is Completed (nil) or Failed (ErrFailed with its reason).
func run(ctx context.Context, opts Options, gvk schema.GroupVersionKind, spec any) (*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(opts.Name)
	ri := dyn.Resource(gvk.GroupVersion().WithResource(api.Plural(gvk.Kind))).Namespace(opts.Namespace)
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, opts.Namespace, opts.Name, err)
	}
	fmt.Fprintf(opts.Out, "%s %s/%s created\n", gvk.Kind, opts.Namespace, opts.Name)
	if opts.NoWait {
		return created, nil
	}
	var last string
	var cur *unstructured.Unstructured
	err = wait.PollUntilContextTimeout(ctx, time.Second, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		if cur, err = ri.Get(ctx, opts.Name, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		line, phase := progress(cur)
		if line != last {
			fmt.Fprintln(opts.Out, line)
			last = line
		}
		switch phase {
		case api.PhaseCompleted:
			return true, nil
		case api.PhaseFailed:
			return false, fmt.Errorf("%s %s/%s %w: %s", gvk.Kind, opts.Namespace, opts.Name, ErrFailed, line)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return cur, fmt.Errorf("%s %s/%s not done after %s: %s", gvk.Kind, opts.Namespace, opts.Name, opts.Timeout, last)
	}
	return cur, err
}

// progress is one line of a backup's or restore's status.
func progress(u *unstructured.Unstructured) (string, api.Phase) {
	st, _ := u.Object["status"].(map[string]any)
	var s struct {
		Phase    api.Phase          `json:"phase"`
		Reason   string             `json:"reason"`
		Message  string             `json:"message"`
		Duration string             `json:"duration"`
		Size     int64              `json:"size"`
		Volumes  []api.VolumeResult `json:"volumes"`
	}
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(st, &s)
	if s.Phase == "" {
		return "waiting for the operator", ""
	}
	done := 0
	for _, v := range s.Volumes {
		if v.Phase == api.PhaseCompleted {
			done++
		}
	}
	line := fmt.Sprintf("%s", s.Phase)
	if s.Reason != "" {
		line += " (" + s.Reason + ")"
	}
	if len(s.Volumes) > 0 {
		line += fmt.Sprintf(", %d/%d volume(s)", done, len(s.Volumes))
	}
	if s.Size > 0 {
		line += fmt.Sprintf(", %d bytes", s.Size)
	}
	if s.Duration != "" {
		line += " in " + s.Duration
	}
	if s.Message != "" {
		line += ": " + s.Message
	}
	return line, s.Phase
}
