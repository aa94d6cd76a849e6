package backupctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Schedule creates a <Kind>BackupSchedule (named opts.Name, default
// "<source>-backups") and prints what it does.
func Schedule(ctx context.Context, opts Options, spec api.ScheduleSpec) (*unstructured.Unstructured, error) {
	ri, gvk, err := scheduleResource(opts)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = spec.Template.Source + "-backups"
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(name)
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, opts.Namespace, name, err)
	}
	fmt.Fprintf(opts.Out, "%s %s/%s created: %s\n", gvk.Kind, opts.Namespace, name, describeSchedule(spec))
	return created, nil
}

// describeSchedule says what a schedule does, in one line.
func describeSchedule(spec api.ScheduleSpec) string {
	s := fmt.Sprintf("backs up %s at %q to %s, keeps %d Completed and %d Failed", spec.Template.Source, spec.Schedule,
		targetText(spec.Template.Target), deref(spec.Keep, api.DefaultKeep), deref(spec.KeepFailed, api.DefaultKeepFailed))
	if spec.StartingDeadline != nil {
		s += ", starting deadline " + spec.StartingDeadline.Duration.String()
	}
	if spec.Suspend {
		s += " (suspended)"
	}
	return s
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func targetText(t api.Target) string {
	switch {
	case t.PVC != nil:
		return "claim " + strings.TrimSuffix(t.PVC.ClaimName+":"+t.PVC.Path, ":")
	case t.S3 != nil:
		return "s3://" + t.S3.Bucket + "/" + t.S3.Prefix + " at " + t.S3.Endpoint
	}
	return "no target"
}

// ScheduleRow is one schedule as ListSchedules reports it.
type ScheduleRow struct {
	Name, Schedule, Source string
	Suspend                bool
	// LastBackup is the Backup created last; LastRun and NextRun the
	// cron ticks last run and next (nil when none).
	LastBackup       string
	LastRun, NextRun *time.Time
	Kept             int
	Reason, Message  string
}

// ListSchedules reads the schedules of the namespace, sorted by name.
func ListSchedules(ctx context.Context, opts Options) ([]ScheduleRow, error) {
	ri, gvk, err := scheduleResource(opts)
	if err != nil {
		return nil, err
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the %ss of namespace %s: %w", gvk.Kind, opts.Namespace, err)
	}
	var rows []ScheduleRow
	for _, item := range list.Items {
		var spec api.ScheduleSpec
		var st api.ScheduleStatus
		if m, ok := item.Object["spec"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
				return nil, fmt.Errorf("reading the spec of %s %s: %w", gvk.Kind, item.GetName(), err)
			}
		}
		if m, ok := item.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
				return nil, fmt.Errorf("reading the status of %s %s: %w", gvk.Kind, item.GetName(), err)
			}
		}
		rows = append(rows, ScheduleRow{
			Name: item.GetName(), Schedule: spec.Schedule, Source: spec.Template.Source, Suspend: spec.Suspend,
			LastBackup: st.LastBackup, LastRun: timeOf(st.LastScheduleTime), NextRun: timeOf(st.NextScheduleTime),
			Kept: st.Kept, Reason: st.Reason, Message: st.Message,
		})
	}
	slices.SortFunc(rows, func(a, b ScheduleRow) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// PrintSchedules writes the rows as a table; times in UTC, with how far
// they are from now.
func PrintSchedules(w io.Writer, rows []ScheduleRow, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tSOURCE\tLAST BACKUP\tLAST RUN\tNEXT RUN\tKEPT\tREASON")
	for _, r := range rows {
		next := when(r.NextRun, now)
		if r.Suspend {
			next = "suspended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Name, r.Schedule, r.Source, orDash(r.LastBackup), when(r.LastRun, now), next, r.Kept, orDash(r.Reason))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when is a time in UTC and its distance from now.
func when(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	rel := "in " + d.String()
	if d < 0 {
		rel = (-d).String() + " ago"
	}
	return t.Format(time.RFC3339) + " (" + rel + ")"
}

// scheduleResource resolves the schedule kind of opts.Resource.
func scheduleResource(opts Options) (dynamic.ResourceInterface, schema.GroupVersionKind, error) {
	if err := opts.defaults(); err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	watched, err := resolve(opts.Config, opts.Resource)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	gvk := api.ScheduleKind(watched)
	return dyn.Resource(api.ScheduleResource(watched)).Namespace(opts.Namespace), gvk, nil
}
