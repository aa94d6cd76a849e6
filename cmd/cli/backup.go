package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/backupctl"
	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// followFlags are the flags backup and restore share.
type followFlags struct {
	name    string
	noWait  bool
	timeout time.Duration
}

func (f *followFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "name of the object created (default: derived from the CR or backup and the time)")
	fl.BoolVar(&f.noWait, "no-wait", false, "return once the object is created")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Minute, "how long to follow it")
}

func (f *followFlags) validate() error {
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout %s: not a positive duration", f.timeout)
	}
	return nil
}

// clusterOptions are backupctl's options for the kind resource of the
// current namespace, printing to out.
func clusterOptions(configFlags *genericclioptions.ConfigFlags, resource string, out io.Writer) (backupctl.Options, error) {
	cfg, err := runcmd.KubeConfig(configFlags)
	if err != nil {
		return backupctl.Options{}, err
	}
	ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return backupctl.Options{}, err
	}
	return backupctl.Options{Config: cfg, Namespace: ns, Resource: resource, Out: out}, nil
}

// options completes backupctl's options from the flags.
func (f *followFlags) options(cmd *cobra.Command, configFlags *genericclioptions.ConfigFlags, resource string) (backupctl.Options, error) {
	o, err := clusterOptions(configFlags, resource, cmd.OutOrStdout())
	o.Name, o.NoWait, o.Timeout = f.name, f.noWait, f.timeout
	return o, err
}

// backupOptions are `chartpilot backup`'s.
type backupOptions struct {
	configFlags *genericclioptions.ConfigFlags
	follow      followFlags
	flags       backupctl.BackupFlags
	// completed
	ctl    backupctl.Options
	source string
	spec   api.BackupSpec
}

func newBackupCommand(_ genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &backupOptions{configFlags: configFlags}
	cmd := &cobra.Command{
		Use:   "backup RESOURCE NAME (--pvc CLAIM[:PATH] | --s3-endpoint HOST:PORT --s3-bucket B --s3-credentials-secret S)",
		Short: "Back up a custom resource of a chartpilot operator, its release and its volumes",
		Long: `Creates a <Kind>Backup of the custom resource NAME of kind RESOURCE (as kubectl
names it: hello, hellos.charts.example.com) in the current namespace, and prints
its progress until it is Completed or Failed. The operator does the work: it
must serve the backup kinds (chartpilot init and generate scaffold them).`,
		Example: `  chartpilot backup hello hello-sample --pvc backups:nightly
  chartpilot backup hello hello-sample --s3-endpoint 10.0.0.1:9000 --s3-bucket backups --s3-insecure --s3-credentials-secret s3`,
		Args: cobra.ExactArgs(2),
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	o.follow.add(cmd)
	o.flags.AddFlags(cmd.Flags())
	return cmd
}

func (o *backupOptions) complete(cmd *cobra.Command, args []string) (err error) {
	o.source = args[1]
	o.ctl, err = o.follow.options(cmd, o.configFlags, args[0])
	return err
}

func (o *backupOptions) validate() (err error) {
	if err := o.follow.validate(); err != nil {
		return err
	}
	o.spec, err = o.flags.Spec(o.source)
	return err
}

func (o *backupOptions) run(ctx context.Context) error {
	_, err := backupctl.Backup(ctx, o.ctl, o.spec)
	return err
}

// restoreOptions are `chartpilot restore`'s.
type restoreOptions struct {
	configFlags *genericclioptions.ConfigFlags
	follow      followFlags
	spec        api.RestoreSpec
	ctl         backupctl.Options
}

func newRestoreCommand(_ genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &restoreOptions{configFlags: configFlags}
	cmd := &cobra.Command{
		Use:   "restore RESOURCE BACKUP",
		Short: "Restore a custom resource of a chartpilot operator, with its volumes, from a backup",
		Long: `Creates a <Kind>Restore of the Completed <Kind>Backup BACKUP of the current
namespace and prints its progress until the restored custom resource is
Deployed and Ready (Completed) or the restore Failed. Nothing is overwritten
unless --overwrite.`,
		Example: `  chartpilot restore hello hello-sample-20261203-120000
  chartpilot restore hello nightly --target-namespace staging --target-name hello-copy`,
		Args: cobra.ExactArgs(2),
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	o.follow.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.spec.TargetNamespace, "target-namespace", "", "namespace to restore into (default: the backup's)")
	fl.StringVar(&o.spec.TargetName, "target-name", "", "name of the restored custom resource (default: the backed-up one's)")
	fl.BoolVar(&o.spec.Overwrite, "overwrite", false, "replace an existing custom resource, claim, Secret or ConfigMap")
	return cmd
}

func (o *restoreOptions) complete(cmd *cobra.Command, args []string) (err error) {
	o.spec.BackupName = args[1]
	o.ctl, err = o.follow.options(cmd, o.configFlags, args[0])
	return err
}

func (o *restoreOptions) validate() error { return o.follow.validate() }

func (o *restoreOptions) run(ctx context.Context) error {
	_, err := backupctl.Restore(ctx, o.ctl, o.spec)
	return err
}

// scheduleOptions are `chartpilot schedule`'s.
type scheduleOptions struct {
	configFlags *genericclioptions.ConfigFlags
	flags       backupctl.ScheduleFlags
	name        string
	list        bool
	// completed
	ctl    backupctl.Options
	source string
	spec   api.ScheduleSpec
}

func newScheduleCommand(_ genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &scheduleOptions{configFlags: configFlags}
	cmd := &cobra.Command{
		Use:   "schedule RESOURCE (NAME --cron EXPR (--pvc CLAIM[:PATH] | --s3-...) | --list)",
		Short: "Back up a custom resource of a chartpilot operator on a cron schedule, or list the schedules",
		Long: `Creates a <Kind>BackupSchedule that backs up the custom resource NAME of kind
RESOURCE (as kubectl names it) of the current namespace at each tick of --cron,
keeping the last --keep Completed backups, and prints what it does. The target
flags are backup's. With --list, prints the schedules of the namespace with
their last backup, last and next run.`,
		Example: `  chartpilot schedule hello hello-sample --cron "0 2 * * *" --keep 7 --pvc backups:nightly
  chartpilot schedule hello hello-sample --cron "@every 6h" --s3-endpoint 10.0.0.1:9000 --s3-bucket backups --s3-credentials-secret s3
  chartpilot schedule hello --list`,
		Args: cobra.RangeArgs(1, 2),
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	fl := cmd.Flags()
	fl.StringVar(&o.name, "name", "", "name of the schedule (default: NAME-backups)")
	fl.BoolVar(&o.list, "list", false, "print the schedules of the namespace with their last and next run")
	o.flags.AddFlags(fl)
	return cmd
}

func (o *scheduleOptions) complete(cmd *cobra.Command, args []string) (err error) {
	if len(args) == 2 {
		o.source = args[1]
	}
	o.ctl, err = clusterOptions(o.configFlags, args[0], cmd.OutOrStdout())
	o.ctl.Name = o.name
	return err
}

// errScheduleArgs says what schedule takes.
var errScheduleArgs = errors.New("give the custom resource NAME to back up, or --list")

func (o *scheduleOptions) validate() (err error) {
	switch {
	case o.list && o.source != "":
		return fmt.Errorf("--list takes RESOURCE only, not the name %q", o.source)
	case o.list:
		return nil
	case o.source == "":
		return errScheduleArgs
	}
	o.spec, err = o.flags.Spec(o.source)
	return err
}

func (o *scheduleOptions) run(ctx context.Context) error {
	if !o.list {
		_, err := backupctl.Schedule(ctx, o.ctl, o.spec)
		return err
	}
	rows, err := backupctl.ListSchedules(ctx, o.ctl)
	if err != nil {
		return err
	}
	return backupctl.PrintSchedules(o.ctl.Out, rows, time.Now())
}
