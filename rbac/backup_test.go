package rbac

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/chart"
)

// writtenChart is a chart made of files (path: content) in a temporary
// directory; Chart.yaml is added when missing.
func writtenChart(t *testing.T, files map[string]string) *chart.Chart {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if _, ok := files["Chart.yaml"]; !ok {
		files["Chart.yaml"] = "apiVersion: v2\nname: app\nversion: 0.1.0\n"
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deployment is a Deployment template whose pod template's annotations
// are annotations (YAML lines, indented to fit) followed by the chart's
// podAnnotations value, as most charts pass it on.
func deployment(annotations string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations:
` + annotations + `        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      containers: [{name: web, image: web}]
`
}

const (
	// podAnnotations is values.yaml with no annotation: a CR may add any.
	podAnnotations = "podAnnotations: {}\n"
	pvc            = "{{- if .Values.persistence.enabled }}\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n{{- end }}\n"
	statefulSet    = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector: {matchLabels: {app: db}}\n  serviceName: db\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: db}]}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
)

// The backup API's extra rules follow the chart: pods/exec only when its
// pods carry Velero's hook annotations (or watches.yaml opts in), the
// snapshot API only when it makes claims; each named with what made the
// derivation grant it.
func TestDeriveBackupExtras(t *testing.T) {
	const (
		exec     = "ns /pods/exec: get,create"
		contents = "cluster snapshot.storage.k8s.io/volumesnapshotcontents: get,create,delete"
	)
	// snapshotAPI are every rule of the CSI snapshot path.
	snapshotAPI := []string{contents, "cluster snapshot.storage.k8s.io/volumesnapshotclasses: list",
		"cluster storage.k8s.io/storageclasses: get", "ns snapshot.storage.k8s.io/volumesnapshots: get,create,delete,deletecollection"}
	tests := []struct {
		name  string
		files map[string]string
		// samples are the sample CRs' values; hooks sets BackupHooks;
		// noBackup leaves the backup API out.
		samples  []map[string]any
		hooks    bool
		noBackup bool
		// want are the extras granted, by name; evidence a part of each
		// one's reason.
		want     []string
		evidence []string
		// rules must be derived, absent must not.
		rules, absent []string
	}{
		{
			name:   "no hook, no claim: neither pods/exec nor any snapshot rule",
			files:  map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment("")},
			absent: append([]string{exec}, snapshotAPI...),
			// The mover pods and claims of a copy are granted as before.
			rules: []string{"ns /pods: get,list,watch,create,delete,deletecollection", "ns /persistentvolumeclaims: get,list,watch,create,update"},
		},
		{
			name:     "a pre-backup hook in the pod template",
			files:    map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment("        pre.hook.backup.velero.io/command: '[\"/bin/sh\",\"-c\",\"sync\"]'\n")},
			want:     []string{HooksExtra.Name},
			evidence: []string{"app/templates/deploy.yaml renders pre.hook.backup.velero.io/command"},
			rules:    []string{exec}, absent: snapshotAPI,
		},
		{
			name:     "a post-restore hook in the chart's default podAnnotations",
			files:    map[string]string{"values.yaml": "podAnnotations:\n  post.hook.restore.velero.io/command: /warm\n", "templates/deploy.yaml": deployment("")},
			want:     []string{HooksExtra.Name},
			evidence: []string{"renders post.hook.restore.velero.io/command"},
			rules:    []string{exec},
		},
		{
			name: "a hook behind a value",
			files: map[string]string{"values.yaml": "podAnnotations: {}\nquiesce: false\n",
				"templates/deploy.yaml": deployment("        {{- if .Values.quiesce }}\n        post.hook.backup.velero.io/command: /thaw\n        {{- end }}\n")},
			want:  []string{HooksExtra.Name},
			rules: []string{exec},
		},
		{
			name: "a hook in a subchart's template",
			files: map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment(""),
				"charts/db/Chart.yaml": "apiVersion: v2\nname: db\nversion: 0.1.0\n", "charts/db/values.yaml": podAnnotations,
				"charts/db/templates/deploy.yaml": strings.ReplaceAll(deployment("        pre.hook.backup.velero.io/command: /freeze\n"), "{{ .Release.Name }}", "db")},
			want:  []string{HooksExtra.Name},
			rules: []string{exec},
		},
		{
			name:     "a hook a sample's values add",
			files:    map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment("")},
			samples:  []map[string]any{{"podAnnotations": map[string]any{"pre.hook.backup.velero.io/command": "/freeze"}}},
			want:     []string{HooksExtra.Name},
			evidence: []string{"renders pre.hook.backup.velero.io/command"},
			rules:    []string{exec},
		},
		{
			name:     "hooks opted in for annotations a CR adds",
			files:    map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment("")},
			hooks:    true,
			want:     []string{HooksExtra.Name},
			evidence: []string{"backupHooks is set"},
			rules:    []string{exec},
		},
		{
			name:   "Velero's other annotations are no hook",
			files:  map[string]string{"values.yaml": podAnnotations, "templates/deploy.yaml": deployment("        backup.velero.io/backup-volumes: data\n        pre.hook.backup.velero.io/container: web\n")},
			absent: []string{exec},
		},
		{
			name:     "a claim behind a value: the snapshot API, no pods/exec",
			files:    map[string]string{"values.yaml": "podAnnotations: {}\npersistence: {enabled: false}\n", "templates/deploy.yaml": deployment(""), "templates/pvc.yaml": pvc},
			want:     []string{SnapshotCopiesExtra.Name},
			evidence: []string{"PersistentVolumeClaim in app/templates/pvc.yaml"},
			rules:    snapshotAPI, absent: []string{exec},
		},
		{
			name:     "a StatefulSet's volumeClaimTemplates",
			files:    map[string]string{"templates/sts.yaml": statefulSet},
			want:     []string{SnapshotCopiesExtra.Name},
			evidence: []string{"volumeClaimTemplates in app/templates/sts.yaml"},
			rules:    snapshotAPI,
		},
		{
			name:     "without the backup API nothing extra",
			files:    map[string]string{"values.yaml": "podAnnotations:\n  pre.hook.backup.velero.io/command: /x\n", "templates/deploy.yaml": deployment(""), "templates/sts.yaml": statefulSet},
			noBackup: true,
			absent:   append([]string{exec}, snapshotAPI...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Derive(Options{Chart: writtenChart(t, tt.files), Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"},
				Backup: !tt.noBackup, BackupHooks: tt.hooks, SampleValues: tt.samples, WatchNamespace: "apps"})
			if err != nil {
				t.Fatal(err)
			}
			got := ruleStrings(res.Rules)
			for _, r := range tt.rules {
				if !slices.Contains(got, r) {
					t.Errorf("no rule %q in\n%s", r, strings.Join(got, "\n"))
				}
			}
			for _, r := range tt.absent {
				if slices.Contains(got, r) {
					t.Errorf("rule %q granted", r)
				}
			}
			var names []string
			for _, e := range FindExtras(PolicyRules(res.Rules)) {
				names = append(names, e.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("extras %q, want %q", names, tt.want)
			}
			reasons := strings.Join(reasonsOf(res.Rules), "\n")
			for _, e := range tt.evidence {
				if !strings.Contains(reasons, e) {
					t.Errorf("no reason names %q:\n%s", e, reasons)
				}
			}
		})
	}
}

func reasonsOf(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Reasons...)
	}
	return out
}

// FindExtras names what a role grants, whoever derived it: a wildcard
// grants every extra, a read-only rule none.
func TestFindExtras(t *testing.T) {
	tests := []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  []string
	}{
		{name: "none"},
		{name: "pods/exec create", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/exec"}, Verbs: []string{"create"}}}, want: []string{"backup-hooks"}},
		{name: "pods/exec get only", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}}}, want: []string{"backup-hooks"}},
		{name: "pods get", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create"}}}},
		{name: "contents delete", rules: []rbacv1.PolicyRule{{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"delete"}}}, want: []string{"snapshot-copies"}},
		{name: "contents list", rules: []rbacv1.PolicyRule{{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"list"}}}},
		{name: "contents of another group", rules: []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"*"}}}},
		{name: "cluster-admin", rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}, want: []string{"backup-hooks", "snapshot-copies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range FindExtras(tt.rules) {
				got = append(got, e.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("FindExtras = %q, want %q", got, tt.want)
			}
		})
	}
}
