package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// Extra is a permission of the backup API beyond what managing a chart's
// release takes, granted only to an operator whose chart needs it, and
// named, with why, in role.yaml, the CSV's description and `bundle
// validate`'s output.
type Extra struct {
	// Name names the permission, e.g. "backup-hooks".
	Name string `json:"name"`
	// Rule is what is granted.
	Rule rbacv1.PolicyRule `json:"rule"`
	// Namespaced rules go to the Role when the operator watches one
	// namespace; the others hold cluster-wide.
	Namespaced bool `json:"namespaced"`
	// Why says what needs each verb, and when chartpilot grants it.
	Why string `json:"why"`
}

// The backup API's extra permissions.
var (
	// HooksExtra runs Velero's hooks: a command in a pod, so any pod of
	// the watched namespaces.
	HooksExtra = Extra{
		Name:       "backup-hooks",
		Rule:       rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: backupapi.HookExecVerbs},
		Namespaced: true,
		Why: "runs the commands of the Velero hook annotations (" + strings.Join(backupapi.HookAnnotations(), ", ") +
			") of the release's pods before and after a backup and after a restore (get and create: an exec over a WebSocket is authorized as both); granted only when the chart's templates or values carry one, or watches.yaml sets backupHooks",
	}
	// SnapshotCopiesExtra restores a CSI snapshot into another namespace:
	// VolumeSnapshotContents are cluster-scoped.
	SnapshotCopiesExtra = Extra{
		Name: "snapshot-copies",
		Rule: rbacv1.PolicyRule{APIGroups: []string{snapv1.GroupName}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"get", "create", "delete"}},
		Why: "restores a claim backed up as a CSI snapshot into another namespace: get reads the snapshot handle of the content bound to the backup's VolumeSnapshot, " +
			"create makes a content with that handle (deletionPolicy Retain) bound to a VolumeSnapshot in the namespace restored into, delete removes that copy once the claim is filled; " +
			"contents are cluster-scoped, so the rule is cluster-wide; granted only when the chart makes PersistentVolumeClaims",
	}
)

// Extras are the backup API's extra permissions, in a stable order.
var Extras = []Extra{HooksExtra, SnapshotCopiesExtra}

// String names the extra, its rule and why, on one line: "backup-hooks
// (pods/exec: create, in the watched namespaces): runs ...".
func (e Extra) String() string {
	r := e.Rule
	res := r.Resources[0]
	if g := r.APIGroups[0]; g != "" {
		res += "." + g
	}
	scope := "cluster-wide"
	if e.Namespaced {
		scope = "in the watched namespaces"
	}
	return fmt.Sprintf("%s (%s: %s, %s): %s", e.Name, res, strings.Join(r.Verbs, ", "), scope, e.Why)
}

// reason is the role.yaml comment of the extra, with what made the
// derivation grant it.
func (e Extra) reason(evidence string) string {
	return e.Name + ": " + e.Why + " (" + evidence + ")"
}

// FindExtras returns the extras that rules grant, in the order of Extras:
// those with a rule allowing one of their verbs on their resource.
func FindExtras(rules []rbacv1.PolicyRule) []Extra {
	var out []Extra
	for _, e := range Extras {
		if slices.ContainsFunc(rules, e.grantedBy) {
			out = append(out, e)
		}
	}
	return out
}

func (e Extra) grantedBy(r rbacv1.PolicyRule) bool {
	anyOf := func(have, want []string) bool {
		return slices.Contains(have, "*") || slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
	}
	return anyOf(r.APIGroups, e.Rule.APIGroups) && anyOf(r.Resources, e.Rule.Resources) && anyOf(r.Verbs, e.Rule.Verbs)
}

func (d *derivation) addExtra(e Extra, evidence string) {
	d.rules.add(e.Namespaced, e.Rule.APIGroups[0], e.Rule.Resources[0], nil, e.Rule.Verbs, e.reason(evidence))
}

// grantBackup adds what the operator's backups and restores need: pods/exec
// only for a chart whose pods carry hooks, the snapshot API only for one
// that makes claims.
func (d *derivation) grantBackup() {
	o := d.opts.Owner
	watched := schema.GroupVersionKind{Group: o.Group, Kind: o.Kind}
	for _, r := range []string{backupapi.BackupResource(watched).Resource, backupapi.RestoreResource(watched).Resource, backupapi.ScheduleResource(watched).Resource} {
		d.rules.add(true, o.Group, r, nil, []string{"get", "list", "watch", "patch", "update"}, r+"."+o.Group+": backups, restores and backup schedules of the custom resource")
		d.rules.add(true, o.Group, r+"/status", nil, []string{"get", "patch", "update"}, r+"."+o.Group+": their status")
	}
	// Read only: a grant is the target namespace's consent, which the
	// operator (and so no chart it renders, no restore it runs) may write.
	grants := backupapi.RestoreGrantResource(watched).Resource
	d.rules.add(true, o.Group, grants, nil, []string{"get", "list"}, grants+"."+o.Group+": a restore into another namespace checks that a grant there lets the restore's namespace in")
	backups := backupapi.BackupResource(watched).Resource
	d.rules.add(true, o.Group, backups, nil, []string{"create", "delete"}, backups+"."+o.Group+": a schedule creates backups and deletes those beyond its retention")
	d.rules.add(true, o.Group, o.Resource, nil, []string{"create"}, o.Resource+"."+o.Group+": a restore creates the custom resource")
	d.rules.add(true, "", "pods", nil, []string{"get", "list", "watch", "create", "delete", "deletecollection"}, "backup and restore: the mover pods that copy volumes, the hooks' pods")
	d.rules.add(true, "", "persistentvolumeclaims", nil, []string{"get", "list", "watch", "create", "update"}, "backup and restore: the volumes copied and recreated")
	d.rules.add(true, "", "configmaps", nil, []string{"get", "list", "watch", "create", "update"}, "backup and restore: the ConfigMaps a release renders")
	d.rules.add(true, "", "secrets", nil, manageVerbs, "backup and restore: the contents of a backup, the Secrets a release renders")
	if hooks := d.hookEvidence(); hooks != "" {
		d.addExtra(HooksExtra, hooks)
	}
	if claims := d.claimEvidence(); claims != "" {
		d.grantSnapshots(claims)
	}
}

// grantSnapshots adds the CSI snapshot path of a chart that makes claims
// (evidence says where).
func (d *derivation) grantSnapshots(claims string) {
	d.rules.add(false, "storage.k8s.io", "storageclasses", nil, []string{"get"}, "backup: the CSI driver of a claim's StorageClass, whose VolumeSnapshotClass snapshots it ("+claims+")")
	d.rules.add(false, snapv1.GroupName, "volumesnapshotclasses", nil, []string{"list"}, "backup: the VolumeSnapshotClass of a claim's CSI driver ("+claims+")")
	d.rules.add(true, snapv1.GroupName, "volumesnapshots", nil, []string{"get", "create", "delete", "deletecollection"}, "backup and restore: a backup's VolumeSnapshots, the sources of restored claims ("+claims+")")
	d.addExtra(SnapshotCopiesExtra, claims)
}

// hookEvidence says why the operator must run hooks ("" when nothing
// shows it must): watches.yaml's opt-in, a render whose object carries a
// hook's command annotation (the default values, the user's, a sample's or
// explored ones), a template or the chart's values naming one (behind a
// gate no render turned on).
//
// Annotations a custom resource adds through values the chart passes on
// (podAnnotations) are not seen: backupHooks opts in, and without it the
// operator fails such a backup with reason HookNotPermitted.
func (d *derivation) hookEvidence() string {
	if d.opts.BackupHooks {
		return "backupHooks is set"
	}
	for _, r := range d.renders {
		for _, m := range r.Objects {
			if key := hookKeyIn(m.Object.Object); key != "" {
				return m.Source + " renders " + key
			}
		}
	}
	var found string
	eachChart(d.opts.Chart.Helm, func(ch *helmchart.Chart) bool {
		for _, t := range ch.Templates {
			if backupapi.MentionsHook(string(t.Data)) {
				found = "template " + ch.Name() + "/" + t.Name + " writes a hook annotation"
				return false
			}
		}
		if key := hookKeyIn(ch.Values); key != "" {
			found = "the values of chart " + ch.Name() + " set " + key
			return false
		}
		return true
	})
	return found
}

// hookKeyIn finds a hook's command annotation among the keys of v's maps,
// at any depth ("" when there is none).
func hookKeyIn(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if backupapi.IsHookAnnotation(k) {
				return k
			}
			if found := hookKeyIn(v[k]); found != "" {
				return found
			}
		}
	case []any:
		for _, e := range v {
			if found := hookKeyIn(e); found != "" {
				return found
			}
		}
	}
	return ""
}

// claimEvidence says where the chart makes PersistentVolumeClaims ("" when
// it makes none): a PersistentVolumeClaim any render or template makes, or
// a template with volumeClaimTemplates.
func (d *derivation) claimEvidence() string {
	var from []string
	if c, ok := d.kinds[schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}]; ok {
		from = append(from, "PersistentVolumeClaim in "+strings.Join(sortedKeys(c.templates), ", "))
	}
	eachChart(d.opts.Chart.Helm, func(ch *helmchart.Chart) bool {
		for _, t := range ch.Templates {
			if strings.Contains(string(t.Data), "volumeClaimTemplates") {
				from = append(from, "volumeClaimTemplates in "+ch.Name()+"/"+t.Name)
			}
		}
		return true
	})
	return strings.Join(from, "; ")
}

// eachChart calls fn with ch and its subcharts, depth first, until fn
// returns false.
func eachChart(ch *helmchart.Chart, fn func(*helmchart.Chart) bool) bool {
	if !fn(ch) {
		return false
	}
	for _, dep := range ch.Dependencies() {
		if !eachChart(dep, fn) {
			return false
		}
	}
	return true
}
