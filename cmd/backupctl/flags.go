package backupctl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Flag names, defined once: the commands register them through AddFlags,
// and the errors of Spec name them.
const (
	FlagPVC              = "pvc"
	FlagS3Endpoint       = "s3-endpoint"
	FlagS3Bucket         = "s3-bucket"
	FlagS3Prefix         = "s3-prefix"
	FlagS3Region         = "s3-region"
	FlagS3Insecure       = "s3-insecure"
	FlagS3Credentials    = "s3-credentials-secret"
	FlagSkipSecrets      = "skip-secrets"
	FlagSkipConfigMaps   = "skip-configmaps"
	FlagHookTimeout      = "hook-timeout"
	FlagWaitTimeout      = "wait-timeout"
	FlagVolumeMethod     = "volume-method"
	FlagSnapshotClass    = "volume-snapshot-class"
	FlagCron             = "cron"
	FlagKeep             = "keep"
	FlagKeepFailed       = "keep-failed"
	FlagStartingDeadline = "starting-deadline"
	FlagSuspend          = "suspend"
)

// BackupFlags are a Backup's spec as `chartpilot backup` and `schedule`
// take it from flags.
type BackupFlags struct {
	// PVC is CLAIM[:PATH] of a claim target.
	PVC string
	// S3 is an S3 target when its bucket is set.
	S3                          api.S3Target
	SkipSecrets, SkipConfigMaps bool
	// HookTimeout and WaitTimeout are the spec's; 0 leaves the operator's
	// defaults.
	HookTimeout, WaitTimeout time.Duration
	// VolumeMethod and SnapshotClass choose how the claims' data are kept;
	// empty leaves the operator's default (auto).
	VolumeMethod, SnapshotClass string
}

// AddFlags registers the flags on fs.
func (f *BackupFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.PVC, FlagPVC, "", "target claim of the namespace, and a folder in it: CLAIM[:PATH]")
	fs.StringVar(&f.S3.Endpoint, FlagS3Endpoint, "", "S3 target: host:port of the store")
	fs.StringVar(&f.S3.Bucket, FlagS3Bucket, "", "S3 target: bucket")
	fs.StringVar(&f.S3.Prefix, FlagS3Prefix, "", "S3 target: key prefix")
	fs.StringVar(&f.S3.Region, FlagS3Region, "", "S3 target: region")
	fs.BoolVar(&f.S3.Insecure, FlagS3Insecure, false, "S3 target: plain HTTP")
	fs.StringVar(&f.S3.CredentialsSecret, FlagS3Credentials, "", "S3 target: Secret of the namespace with "+api.S3AccessKeyIDKey+" and "+api.S3SecretAccessKeyKey)
	fs.BoolVar(&f.SkipSecrets, FlagSkipSecrets, false, "leave out the Secrets the release renders")
	fs.BoolVar(&f.SkipConfigMaps, FlagSkipConfigMaps, false, "leave out the ConfigMaps the release renders")
	fs.DurationVar(&f.HookTimeout, FlagHookTimeout, 0, "bound of each hook that sets none (operator default 30s)")
	fs.DurationVar(&f.WaitTimeout, FlagWaitTimeout, 0, "how long to wait for a release mid-upgrade (operator default 5m)")
	fs.StringVar(&f.VolumeMethod, FlagVolumeMethod, "", "how the claims' data are kept: auto (a VolumeSnapshot where the claim's CSI driver has a VolumeSnapshotClass, else a copy; the default), snapshot or copy")
	fs.StringVar(&f.SnapshotClass, FlagSnapshotClass, "", "VolumeSnapshotClass of the snapshots (default: the default class of each claim's driver)")
}

// Spec is the Backup spec of the CR source; an error names the flag.
func (f BackupFlags) Spec(source string) (api.BackupSpec, error) {
	spec := api.BackupSpec{Source: source, SkipSecrets: f.SkipSecrets, SkipConfigMaps: f.SkipConfigMaps}
	switch {
	case f.PVC != "" && f.S3.Bucket != "":
		return spec, fmt.Errorf("--%s and --%s: give one target", FlagPVC, FlagS3Bucket)
	case f.PVC != "":
		claim, path, _ := strings.Cut(f.PVC, ":")
		if claim == "" {
			return spec, fmt.Errorf("--%s %q: no claim name before the colon", FlagPVC, f.PVC)
		}
		spec.Target.PVC = &api.PVCTarget{ClaimName: claim, Path: path}
	case f.S3.Bucket != "":
		if f.S3.Endpoint == "" || f.S3.CredentialsSecret == "" {
			return spec, fmt.Errorf("--%s needs --%s and --%s", FlagS3Bucket, FlagS3Endpoint, FlagS3Credentials)
		}
		s3 := f.S3
		spec.Target.S3 = &s3
	case f.S3 != api.S3Target{}:
		return spec, fmt.Errorf("--%s is required with the other --s3-* flags", FlagS3Bucket)
	default:
		return spec, fmt.Errorf("no target: give --%s or --%s", FlagPVC, FlagS3Bucket)
	}
	for flag, d := range map[string]time.Duration{FlagHookTimeout: f.HookTimeout, FlagWaitTimeout: f.WaitTimeout} {
		if d < 0 {
			return spec, fmt.Errorf("--%s %s: not a positive duration", flag, d)
		}
	}
	switch m := api.VolumeMethod(f.VolumeMethod); m {
	case "", api.VolumeMethodAuto, api.VolumeMethodSnapshot, api.VolumeMethodCopy:
		spec.VolumeMethod = m
	default:
		return spec, fmt.Errorf("--%s %q: give %s, %s or %s", FlagVolumeMethod, f.VolumeMethod, api.VolumeMethodAuto, api.VolumeMethodSnapshot, api.VolumeMethodCopy)
	}
	spec.VolumeSnapshotClassName = f.SnapshotClass
	if f.HookTimeout > 0 {
		spec.HookTimeout = &metav1.Duration{Duration: f.HookTimeout}
	}
	if f.WaitTimeout > 0 {
		spec.WaitTimeout = &metav1.Duration{Duration: f.WaitTimeout}
	}
	return spec, nil
}

// ScheduleFlags are a schedule's spec as `chartpilot schedule` takes it.
type ScheduleFlags struct {
	Backup BackupFlags
	// Cron is the schedule's cron expression.
	Cron             string
	Keep, KeepFailed int32
	// StartingDeadline bounds how late a run may start; 0 means none.
	StartingDeadline time.Duration
	Suspend          bool
}

// AddFlags registers the flags, the backup's too, on fs.
func (f *ScheduleFlags) AddFlags(fs *pflag.FlagSet) {
	f.Backup.AddFlags(fs)
	fs.StringVar(&f.Cron, FlagCron, "", `when to back up: five cron fields, @daily, "@every 6h", "CRON_TZ=Europe/Paris 0 2 * * *" (UTC otherwise)`)
	fs.Int32Var(&f.Keep, FlagKeep, api.DefaultKeep, "Completed backups kept")
	fs.Int32Var(&f.KeepFailed, FlagKeepFailed, api.DefaultKeepFailed, "Failed backups kept")
	fs.DurationVar(&f.StartingDeadline, FlagStartingDeadline, 0, "a run later than this is skipped (default: the latest missed run starts, once)")
	fs.BoolVar(&f.Suspend, FlagSuspend, false, "create it suspended: no runs until resumed")
}

// ErrNoCron means the schedule has no cron expression.
var ErrNoCron = errors.New("--" + FlagCron + " is required")

// Spec is the schedule spec backing up the CR source; an error names the
// flag.
func (f ScheduleFlags) Spec(source string) (api.ScheduleSpec, error) {
	tmpl, err := f.Backup.Spec(source)
	if err != nil {
		return api.ScheduleSpec{}, err
	}
	switch {
	case f.Cron == "":
		return api.ScheduleSpec{}, ErrNoCron
	case f.Keep < 1:
		return api.ScheduleSpec{}, fmt.Errorf("--%s %d: keep at least 1", FlagKeep, f.Keep)
	case f.KeepFailed < 0:
		return api.ScheduleSpec{}, fmt.Errorf("--%s %d: not a count", FlagKeepFailed, f.KeepFailed)
	case f.StartingDeadline < 0:
		return api.ScheduleSpec{}, fmt.Errorf("--%s %s: not a positive duration", FlagStartingDeadline, f.StartingDeadline)
	}
	if err := backup.CheckSchedule(f.Cron); err != nil {
		return api.ScheduleSpec{}, fmt.Errorf("--%s: %w", FlagCron, err)
	}
	spec := api.ScheduleSpec{Schedule: f.Cron, Template: tmpl, Keep: &f.Keep, KeepFailed: &f.KeepFailed, Suspend: f.Suspend}
	if f.StartingDeadline > 0 {
		spec.StartingDeadline = &metav1.Duration{Duration: f.StartingDeadline}
	}
	return spec, nil
}
