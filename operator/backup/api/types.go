package api

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Suffixes of the backup and restore kinds of a watched Kind.
const (
	BackupSuffix  = "Backup"
	RestoreSuffix = "Restore"
)

// BackupKind is the backup kind of a watched kind: same group and version.
func BackupKind(watched schema.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: watched.Group, Version: watched.Version, Kind: watched.Kind + BackupSuffix}
}

// RestoreKind is the restore kind of a watched kind.
func RestoreKind(watched schema.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: watched.Group, Version: watched.Version, Kind: watched.Kind + RestoreSuffix}
}

// Plural is the resource name of a kind: its lower-cased name with an "s",
// as operator-sdk and chartpilot name the watched kinds' resources.
func Plural(kind string) string { return strings.ToLower(kind) + "s" }

// BackupResource and RestoreResource are the resources of the backup and
// restore kinds of a watched kind.
func BackupResource(watched schema.GroupVersionKind) schema.GroupVersionResource {
	return watched.GroupVersion().WithResource(Plural(BackupKind(watched).Kind))
}

func RestoreResource(watched schema.GroupVersionKind) schema.GroupVersionResource {
	return watched.GroupVersion().WithResource(Plural(RestoreKind(watched).Kind))
}

// Labels the runtime puts on what it creates for a backup or a restore:
// mover pods, the contents Secret, restored objects.
const (
	// BackupLabel names the Backup (its namespace is the object's own).
	BackupLabel = "backup.chartpilot.io/backup"
	// RestoreLabel names the Restore.
	RestoreLabel = "backup.chartpilot.io/restore"
	// ClaimLabel names the PVC a mover pod copies.
	ClaimLabel = "backup.chartpilot.io/claim"
)

// Phase is where a backup or a restore is.
type Phase string

const (
	PhasePending   Phase = "Pending"
	PhaseRunning   Phase = "Running"
	PhaseCompleted Phase = "Completed"
	PhaseFailed    Phase = "Failed"
)

// Done tells whether the phase is final.
func (p Phase) Done() bool { return p == PhaseCompleted || p == PhaseFailed }

// BackupSpec is what a <Kind>Backup asks for.
type BackupSpec struct {
	// Source is the name of the custom resource to back up, in the
	// Backup's namespace.
	Source string `json:"source"`
	// Target is where the volumes' data go.
	Target Target `json:"target"`
	// SkipSecrets leaves out the Secrets the release renders.
	SkipSecrets bool `json:"skipSecrets,omitempty"`
	// SkipConfigMaps leaves out the ConfigMaps the release renders.
	SkipConfigMaps bool `json:"skipConfigMaps,omitempty"`
	// HookTimeout bounds each pre/post hook that sets no timeout of its
	// own. Default 30s.
	HookTimeout *metav1.Duration `json:"hookTimeout,omitempty"`
	// WaitTimeout bounds how long the backup waits for a release in the
	// middle of an install or upgrade to settle before it fails. Default 5m.
	WaitTimeout *metav1.Duration `json:"waitTimeout,omitempty"`
	// VolumeMethod says how the claims' data are kept: auto (the
	// default: a CSI VolumeSnapshot where the claim's driver has a
	// VolumeSnapshotClass, else a copy to the target), snapshot or copy.
	VolumeMethod VolumeMethod `json:"volumeMethod,omitempty"`
	// VolumeSnapshotClassName names the VolumeSnapshotClass of the
	// snapshots; default: the default class of each claim's driver.
	VolumeSnapshotClassName string `json:"volumeSnapshotClassName,omitempty"`
}

// VolumeMethod is how a backup keeps a claim's data.
type VolumeMethod string

// Volume methods.
const (
	VolumeMethodAuto     VolumeMethod = "auto"
	VolumeMethodSnapshot VolumeMethod = "snapshot"
	VolumeMethodCopy     VolumeMethod = "copy"
)

// Target is where a backup's volume data go: one of PVC or S3.
type Target struct {
	PVC *PVCTarget `json:"pvc,omitempty"`
	S3  *S3Target  `json:"s3,omitempty"`
}

// PVCTarget is a PersistentVolumeClaim of the Backup's namespace.
type PVCTarget struct {
	ClaimName string `json:"claimName"`
	// Path is the folder inside the claim; default the root.
	Path string `json:"path,omitempty"`
}

// S3Target is a bucket of an S3-compatible object store.
type S3Target struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix,omitempty"`
	// Region of the bucket; empty lets the client ask the store.
	Region string `json:"region,omitempty"`
	// Insecure uses plain HTTP.
	Insecure bool `json:"insecure,omitempty"`
	// CredentialsSecret names a Secret of the Backup's namespace with the
	// keys S3AccessKeyIDKey and S3SecretAccessKeyKey.
	CredentialsSecret string `json:"credentialsSecret"`
}

// Keys of an S3 target's credentials Secret.
const (
	S3AccessKeyIDKey     = "accessKeyID"
	S3SecretAccessKeyKey = "secretAccessKey"
)

// BackupStatus is what the runtime reports of a backup.
type BackupStatus struct {
	Phase Phase `json:"phase,omitempty"`
	// Reason is a CamelCase word for machines; Message says it for people.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Release is the backed-up release's chart (name-version) and revision.
	Chart    string `json:"chart,omitempty"`
	Revision int    `json:"revision,omitempty"`
	// StartTime is when the copy began (Running), CompletionTime when the
	// backup ended either way.
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Size is the bytes written to the target, over all volumes.
	Size int64 `json:"size,omitempty"`
	// Duration is CompletionTime - StartTime, for people.
	Duration string `json:"duration,omitempty"`
	// Volumes is one result per PVC.
	Volumes []VolumeResult `json:"volumes,omitempty"`
	// Objects counts what the backup holds besides volumes (the CR, its
	// rendered Secrets and ConfigMaps, its PVCs' specs).
	Objects int `json:"objects,omitempty"`
	// ContentsDigest is "sha256:<hex>" of the contents Secret's data as the
	// operator wrote it. It lives in the status because only the operator
	// writes the status subresource: whoever may edit the Secret (the
	// namespace's admins and editors) cannot make an edit match it.
	ContentsDigest string `json:"contentsDigest,omitempty"`
}

// VolumeResult is the copy of one PVC.
type VolumeResult struct {
	ClaimName string `json:"claimName"`
	Phase     Phase  `json:"phase,omitempty"`
	// Size is the bytes of the archive; Files the files in it.
	Size  int64 `json:"size,omitempty"`
	Files int64 `json:"files,omitempty"`
	// Method is how the claim's data were kept: snapshot or copy.
	Method VolumeMethod `json:"method,omitempty"`
	// Snapshot is the claim's VolumeSnapshot (method snapshot).
	Snapshot string `json:"snapshot,omitempty"`
	// Duration is how long the claim's snapshot or copy took.
	Duration string `json:"duration,omitempty"`
	Message  string `json:"message,omitempty"`
}

// RestoreSpec is what a <Kind>Restore asks for.
type RestoreSpec struct {
	// BackupName is a Completed <Kind>Backup of the Restore's namespace.
	BackupName string `json:"backupName"`
	// TargetNamespace is where the CR and its PVCs are recreated; default
	// the Restore's namespace.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// TargetName is the restored CR's name; default the backed-up one's.
	TargetName string `json:"targetName,omitempty"`
	// Overwrite replaces an existing CR, PVC, Secret or ConfigMap of the
	// same name; without it the restore fails and changes nothing.
	Overwrite bool `json:"overwrite,omitempty"`
}

// RestoreStatus is what the runtime reports of a restore.
type RestoreStatus struct {
	Phase          Phase          `json:"phase,omitempty"`
	Reason         string         `json:"reason,omitempty"`
	Message        string         `json:"message,omitempty"`
	StartTime      *metav1.Time   `json:"startTime,omitempty"`
	CompletionTime *metav1.Time   `json:"completionTime,omitempty"`
	Duration       string         `json:"duration,omitempty"`
	Volumes        []VolumeResult `json:"volumes,omitempty"`
	// Restored names the CR created, namespace/name.
	Restored string `json:"restored,omitempty"`
}

// Watched is the watched kind of a backup, restore, schedule or restore
// grant kind, false for another kind.
func Watched(gvk schema.GroupVersionKind) (schema.GroupVersionKind, bool) {
	for _, suffix := range []string{ScheduleSuffix, BackupSuffix, RestoreSuffix, RestoreGrantSuffix} {
		if k, ok := strings.CutSuffix(gvk.Kind, suffix); ok && k != "" {
			return schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: k}, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// SampleTargetClaim is the target claim the samples name.
const SampleTargetClaim = "backups"

// BackupSample is a <Kind>Backup of the CR named source to the claim
// SampleTargetClaim, as config/samples holds it.
func BackupSample(watched schema.GroupVersionKind, source string) map[string]any {
	gvk := BackupKind(watched)
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": source + "-backup"},
		"spec":     map[string]any{"source": source, "target": map[string]any{"pvc": map[string]any{"claimName": SampleTargetClaim}}},
	}
}

// RestoreSample restores the backup of BackupSample.
func RestoreSample(watched schema.GroupVersionKind, source string) map[string]any {
	gvk := RestoreKind(watched)
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": source + "-restore"},
		"spec":     map[string]any{"backupName": source + "-backup"},
	}
}

// BackupCreates are the kinds a backup creates (mover pods, its contents
// Secret): the CSV lists them as the backup CRD's resources.
func BackupCreates() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Secret"}}
}

// RestoreCreates are the kinds a restore creates: mover pods, the claims,
// Secrets and ConfigMaps of the release, and the custom resource.
func RestoreCreates(watched schema.GroupVersionKind) []schema.GroupVersionKind {
	return []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
		{Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "ConfigMap"}, watched}
}

// ScheduleSuffix is the suffix of the schedule kind of a watched Kind.
const ScheduleSuffix = "BackupSchedule"

// ScheduleKind is the schedule kind of a watched kind: same group and
// version.
func ScheduleKind(watched schema.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: watched.Group, Version: watched.Version, Kind: watched.Kind + ScheduleSuffix}
}

// ScheduleResource is the resource of the schedule kind of a watched kind.
func ScheduleResource(watched schema.GroupVersionKind) schema.GroupVersionResource {
	return watched.GroupVersion().WithResource(Plural(ScheduleKind(watched).Kind))
}

// ScheduleLabel names, on a Backup, the schedule of its namespace that
// created it: retention deletes only Backups that carry its own name.
const ScheduleLabel = "backup.chartpilot.io/schedule"

// ArchivesFinalizer holds a Backup until its archives on the target are
// deleted (or found impossible to delete: see the runtime's docs).
const ArchivesFinalizer = "backup.chartpilot.io/archives"

// Defaults of a schedule's retention.
const (
	DefaultKeep       = 3
	DefaultKeepFailed = 1
)

// ScheduleSpec is what a <Kind>BackupSchedule asks for.
type ScheduleSpec struct {
	// Schedule is a cron expression: five fields (minute hour day-of-month
	// month day-of-week), a descriptor (@daily, @hourly, @every 1h30m),
	// optionally after CRON_TZ=<zone>; UTC otherwise.
	Schedule string `json:"schedule"`
	// Template is the spec of the Backups it creates.
	Template BackupSpec `json:"template"`
	// Keep is how many Completed Backups it keeps; older ones are deleted
	// with their archives. Default DefaultKeep.
	Keep *int32 `json:"keep,omitempty"`
	// KeepFailed is how many Failed Backups it keeps. Default
	// DefaultKeepFailed.
	KeepFailed *int32 `json:"keepFailed,omitempty"`
	// StartingDeadline bounds how late a run may start (after an operator
	// outage, or while a backup of the same CR runs); a later run is
	// skipped. Default: the latest missed run starts, once.
	StartingDeadline *metav1.Duration `json:"startingDeadline,omitempty"`
	// Suspend stops new runs; retention goes on.
	Suspend bool `json:"suspend,omitempty"`
}

// ScheduleStatus is what the runtime reports of a schedule.
type ScheduleStatus struct {
	// Reason is a CamelCase word for machines; Message says it for people.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// LastScheduleTime is the cron tick last run (or skipped).
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is the next cron tick.
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastBackup is the Backup it created last, LastCompleted the newest
	// of its Backups that Completed.
	LastBackup    string `json:"lastBackup,omitempty"`
	LastCompleted string `json:"lastCompleted,omitempty"`
	// Kept counts its Backups that exist now.
	Kept int `json:"kept,omitempty"`
}

// ScheduleSample backs up the CR named source every night to the claim
// SampleTargetClaim, keeping a week.
func ScheduleSample(watched schema.GroupVersionKind, source string) map[string]any {
	gvk := ScheduleKind(watched)
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": source + "-nightly"},
		"spec": map[string]any{"schedule": "0 2 * * *", "keep": 7,
			"template": map[string]any{"source": source, "target": map[string]any{"pvc": map[string]any{"claimName": SampleTargetClaim}}}},
	}
}

// ScheduleCreates are the kinds a schedule creates: the Backups.
func ScheduleCreates(watched schema.GroupVersionKind) []schema.GroupVersionKind {
	return []schema.GroupVersionKind{BackupKind(watched)}
}

// RestoreGrantSuffix is the suffix of the restore grant kind of a watched
// Kind.
const RestoreGrantSuffix = "RestoreGrant"

// RestoreGrantKind is the restore grant kind of a watched kind: same group
// and version.
func RestoreGrantKind(watched schema.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: watched.Group, Version: watched.Version, Kind: watched.Kind + RestoreGrantSuffix}
}

// RestoreGrantResource is the resource of the restore grant kind of a
// watched kind.
func RestoreGrantResource(watched schema.GroupVersionKind) schema.GroupVersionResource {
	return watched.GroupVersion().WithResource(Plural(RestoreGrantKind(watched).Kind))
}

// RestoreGrantSpec is what a <Kind>RestoreGrant allows: <Kind>Restores of
// the namespaces it names may restore into the grant's own namespace. A
// restore into another namespace needs one there: the namespace written
// into consents, as a Gateway API ReferenceGrant does for references. The
// grant's kind names the kind of Restores it lets in, so it has no kind
// field to get wrong; and it has no wildcard: each namespace is named.
type RestoreGrantSpec struct {
	// From are the namespaces whose <Kind>Restores may restore here.
	From []RestoreGrantFrom `json:"from"`
}

// RestoreGrantFrom names a namespace a grant lets restore in.
type RestoreGrantFrom struct {
	Namespace string `json:"namespace"`
}

// SampleGrantedNamespace is the namespace the sample grant lets in: a
// placeholder to replace with the namespace restored from.
const SampleGrantedNamespace = "source-namespace"

// RestoreGrantSample lets the Restores of SampleGrantedNamespace restore
// into the grant's namespace, as config/samples holds it.
func RestoreGrantSample(watched schema.GroupVersionKind) map[string]any {
	gvk := RestoreGrantKind(watched)
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": "restores-from-" + SampleGrantedNamespace},
		"spec":     map[string]any{"from": []any{map[string]any{"namespace": SampleGrantedNamespace}}},
	}
}

// RestoreGrantCreates are the kinds a grant lets restores of other
// namespaces create in its own: those of RestoreCreates (the CSV lists
// them as the grant CRD's resources, which OLM and the scorecard require
// of every owned CRD).
func RestoreGrantCreates(watched schema.GroupVersionKind) []schema.GroupVersionKind {
	return RestoreCreates(watched)
}
