package cli

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/backupctl"
	"github.com/chartpilot/chartpilot/internal/runcmd"
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

// options completes backupctl's options from the flags.
func (f *followFlags) options(cmd *cobra.Command, configFlags *genericclioptions.ConfigFlags, resource string) (backupctl.Options, error) {
	cfg, err := runcmd.KubeConfig(configFlags)
	if err != nil {
		return backupctl.Options{}, err
	}
	ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return backupctl.Options{}, err
	}
	return backupctl.Options{Config: cfg, Namespace: ns, Resource: resource, Name: f.name, NoWait: f.noWait, Timeout: f.timeout, Out: cmd.OutOrStdout()}, nil
}

func newBackupCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		follow      followFlags
		spec        api.BackupSpec
		pvc         string
		s3          api.S3Target
		hookTimeout time.Duration
		waitTimeout time.Duration
		method      = newEnumFlag(string(api.VolumeMethodAuto), string(api.VolumeMethodAuto), string(api.VolumeMethodSnapshot), string(api.VolumeMethodCopy))
	)
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
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Source = args[1]
			switch {
			case pvc != "" && s3.Bucket != "":
				return errors.New("--pvc and --s3-bucket: give one target")
			case pvc != "":
				claim, path, _ := strings.Cut(pvc, ":")
				spec.Target.PVC = &api.PVCTarget{ClaimName: claim, Path: path}
			case s3.Bucket != "":
				if s3.Endpoint == "" || s3.CredentialsSecret == "" {
					return errors.New("--s3-bucket needs --s3-endpoint and --s3-credentials-secret")
				}
				spec.Target.S3 = &s3
			default:
				return errors.New("no target: give --pvc or --s3-bucket")
			}
			if hookTimeout > 0 {
				spec.HookTimeout = &metav1.Duration{Duration: hookTimeout}
			}
			if waitTimeout > 0 {
				spec.WaitTimeout = &metav1.Duration{Duration: waitTimeout}
			}
			spec.VolumeMethod = api.VolumeMethod(method.value)
			opts, err := follow.options(cmd, configFlags, args[0])
			if err != nil {
				return err
			}
			_, err = backupctl.Backup(cmd.Context(), opts, spec)
			return err
		},
	}
	follow.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&pvc, "pvc", "", "target claim of the namespace, and a folder in it: CLAIM[:PATH]")
	fl.StringVar(&s3.Endpoint, "s3-endpoint", "", "S3 target: host:port of the store")
	fl.StringVar(&s3.Bucket, "s3-bucket", "", "S3 target: bucket")
	fl.StringVar(&s3.Prefix, "s3-prefix", "", "S3 target: key prefix")
	fl.StringVar(&s3.Region, "s3-region", "", "S3 target: region")
	fl.BoolVar(&s3.Insecure, "s3-insecure", false, "S3 target: plain HTTP")
	fl.StringVar(&s3.CredentialsSecret, "s3-credentials-secret", "", "S3 target: Secret of the namespace with "+api.S3AccessKeyIDKey+" and "+api.S3SecretAccessKeyKey)
	fl.BoolVar(&spec.SkipSecrets, "skip-secrets", false, "leave out the Secrets the release renders")
	fl.BoolVar(&spec.SkipConfigMaps, "skip-configmaps", false, "leave out the ConfigMaps the release renders")
	fl.DurationVar(&hookTimeout, "hook-timeout", 0, "bound of each hook that sets none (operator default 30s)")
	fl.DurationVar(&waitTimeout, "wait-timeout", 0, "how long to wait for a release mid-upgrade (operator default 5m)")
	fl.Var(method, "volume-method", "how the claims' data are kept: auto (a VolumeSnapshot where the claim's CSI driver has a VolumeSnapshotClass, else a copy), snapshot or copy")
	fl.StringVar(&spec.VolumeSnapshotClassName, "volume-snapshot-class", "", "VolumeSnapshotClass of the snapshots (default: the default class of each claim's driver)")
	_ = streams
	return cmd
}

func newRestoreCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		follow followFlags
		spec   api.RestoreSpec
	)
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
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.BackupName = args[1]
			opts, err := follow.options(cmd, configFlags, args[0])
			if err != nil {
				return err
			}
			_, err = backupctl.Restore(cmd.Context(), opts, spec)
			return err
		},
	}
	follow.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&spec.TargetNamespace, "target-namespace", "", "namespace to restore into (default: the backup's)")
	fl.StringVar(&spec.TargetName, "target-name", "", "name of the restored custom resource (default: the backed-up one's)")
	fl.BoolVar(&spec.Overwrite, "overwrite", false, "replace an existing custom resource, claim, Secret or ConfigMap")
	_ = streams
	return cmd
}
