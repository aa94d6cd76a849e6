package backupctl

import (
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

func TestBackupFlagsSpec(t *testing.T) {
	s3 := api.S3Target{Endpoint: "10.0.0.1:9000", Bucket: "b", CredentialsSecret: "s3"}
	tests := []struct {
		name  string
		flags BackupFlags
		// err is a part of the error naming the flag; "" for none.
		err string
		// check looks at the spec made.
		check func(api.BackupSpec) bool
	}{
		{name: "claim and folder", flags: BackupFlags{PVC: "backups:nightly"},
			check: func(s api.BackupSpec) bool {
				return s.Target.PVC.ClaimName == "backups" && s.Target.PVC.Path == "nightly"
			}},
		{name: "claim only", flags: BackupFlags{PVC: "backups", HookTimeout: time.Minute},
			check: func(s api.BackupSpec) bool {
				return s.Target.PVC.Path == "" && s.HookTimeout.Duration == time.Minute && s.WaitTimeout == nil
			}},
		{name: "s3", flags: BackupFlags{S3: s3, SkipSecrets: true},
			check: func(s api.BackupSpec) bool { return *s.Target.S3 == s3 && s.SkipSecrets }},
		{name: "two targets", flags: BackupFlags{PVC: "backups", S3: s3}, err: "--pvc and --s3-bucket"},
		{name: "no target", flags: BackupFlags{}, err: "give --pvc or --s3-bucket"},
		{name: "no claim name", flags: BackupFlags{PVC: ":nightly"}, err: "--pvc"},
		{name: "s3 without credentials", flags: BackupFlags{S3: api.S3Target{Endpoint: "e", Bucket: "b"}}, err: "--s3-credentials-secret"},
		{name: "s3 without bucket", flags: BackupFlags{S3: api.S3Target{Endpoint: "e"}}, err: "--s3-bucket is required"},
		{name: "negative timeout", flags: BackupFlags{PVC: "b", WaitTimeout: -time.Second}, err: "--wait-timeout"},
		{name: "snapshots of a class", flags: BackupFlags{PVC: "b", VolumeMethod: "snapshot", SnapshotClass: "fast"},
			check: func(s api.BackupSpec) bool {
				return s.VolumeMethod == api.VolumeMethodSnapshot && s.VolumeSnapshotClassName == "fast"
			}},
		{name: "unknown volume method", flags: BackupFlags{PVC: "b", VolumeMethod: "clone"}, err: `--volume-method "clone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := tt.flags.Spec("web")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Source != "web" || !tt.check(spec) {
				t.Errorf("spec %+v", spec)
			}
		})
	}
}

func TestScheduleFlagsSpec(t *testing.T) {
	valid := ScheduleFlags{Backup: BackupFlags{PVC: "backups"}, Cron: "0 2 * * *", Keep: 7, KeepFailed: 1}
	with := func(f func(*ScheduleFlags)) ScheduleFlags {
		v := valid
		f(&v)
		return v
	}
	tests := []struct {
		name  string
		flags ScheduleFlags
		err   string
	}{
		{name: "valid", flags: valid},
		{name: "every", flags: with(func(f *ScheduleFlags) { f.Cron = "@every 6h"; f.StartingDeadline = time.Minute })},
		{name: "no cron", flags: with(func(f *ScheduleFlags) { f.Cron = "" }), err: "--cron is required"},
		{name: "bad cron", flags: with(func(f *ScheduleFlags) { f.Cron = "0 25 * * *" }), err: `--cron: schedule "0 25 * * *"`},
		{name: "keep none", flags: with(func(f *ScheduleFlags) { f.Keep = 0 }), err: "--keep 0"},
		{name: "keep failed negative", flags: with(func(f *ScheduleFlags) { f.KeepFailed = -1 }), err: "--keep-failed"},
		{name: "negative deadline", flags: with(func(f *ScheduleFlags) { f.StartingDeadline = -time.Minute }), err: "--starting-deadline"},
		{name: "no target", flags: with(func(f *ScheduleFlags) { f.Backup.PVC = "" }), err: "give --pvc or --s3-bucket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := tt.flags.Spec("web")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Schedule != tt.flags.Cron || *spec.Keep != tt.flags.Keep || spec.Template.Source != "web" {
				t.Errorf("spec %+v", spec)
			}
		})
	}
}

func TestPrintSchedules(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	last, next := now.Add(-10*time.Hour), now.Add(14*time.Hour)
	rows := []ScheduleRow{
		{Name: "nightly", Schedule: "0 2 * * *", Source: "web", LastBackup: "nightly-20261203-020000", LastRun: &last, NextRun: &next, Kept: 3, Reason: "Scheduled"},
		{Name: "paused", Schedule: "@hourly", Source: "db", Suspend: true},
	}
	var out strings.Builder
	if err := PrintSchedules(&out, rows, now); err != nil {
		t.Fatal(err)
	}
	want := `NAME     SCHEDULE   SOURCE  LAST BACKUP              LAST RUN                            NEXT RUN                           KEPT  REASON
nightly  0 2 * * *  web     nightly-20261203-020000  2026-12-03T02:00:00Z (10h0m0s ago)  2026-12-04T02:00:00Z (in 14h0m0s)  3     Scheduled
paused   @hourly    db      -                        -                                   suspended                          0     -
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
