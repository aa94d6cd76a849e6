package doctor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/olm/extension"
)

// CheckExtensionWriters is the check of who may create or change
// ClusterExtensions and ClusterCatalogs.
const CheckExtensionWriters = "Who may install"

// writer is a subject of a ClusterRoleBinding, with the bindings that name
// it.
type writer struct {
	subject  rbacv1.Subject
	bindings []string
}

// name is how the check names the subject.
func (w writer) name() string {
	if w.subject.Kind == rbacv1.ServiceAccountKind {
		return "ServiceAccount " + w.subject.Namespace + "/" + w.subject.Name
	}
	return w.subject.Kind + " " + w.subject.Name
}

// identity is the user and groups the API server sees for the subject.
func (w writer) identity() (string, []string) {
	s := w.subject
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		return "system:serviceaccount:" + s.Namespace + ":" + s.Name,
			[]string{"system:serviceaccounts", "system:serviceaccounts:" + s.Namespace, "system:authenticated"}
	case rbacv1.GroupKind:
		return "", []string{s.Name}
	}
	return s.Name, []string{"system:authenticated"}
}

// writeProbes are the writes to OLM v1's API that install an operator or
// change what is installed from.
func writeProbes() []*probe {
	var out []*probe
	for _, res := range []string{"clusterextensions", "clustercatalogs"} {
		for _, verb := range []string{"create", "update", "patch"} {
			out = append(out, &probe{group: extension.Group, resource: res, verb: verb})
		}
	}
	return out
}

// extensionWriterChecks warns about every subject bound cluster-wide that
// may create or change ClusterExtensions or ClusterCatalogs and is not a
// cluster admin: from OLM v1 v1.11 operator-controller installs as
// cluster-admin whatever the ClusterExtension asks, so that write is
// cluster-admin trust.
func (d *doctor) extensionWriterChecks(ctx context.Context) error {
	var crbs rbacv1.ClusterRoleBindingList
	if err := d.c.List(ctx, &crbs); err != nil {
		return fmt.Errorf("doctor: listing ClusterRoleBindings: %w", err)
	}
	var found []string
	for _, w := range bindingSubjects(crbs.Items) {
		user, groups := w.identity()
		writes, err := d.anyAllowed(ctx, user, groups, writeProbes())
		if err != nil {
			return err
		}
		if !writes {
			continue
		}
		admin, err := d.review(ctx, user, groups, &probe{group: "*", resource: "*", verb: "*"})
		if err != nil {
			return err
		}
		if !admin {
			found = append(found, fmt.Sprintf("%s (ClusterRoleBinding %s)", w.name(), strings.Join(w.bindings, ", ")))
		}
	}
	if len(found) == 0 {
		d.add(Check{Check: CheckExtensionWriters, Severity: Pass,
			Message: "only cluster admins may create or change ClusterExtensions and ClusterCatalogs"})
		return nil
	}
	d.add(Check{Check: CheckExtensionWriters, Severity: Warn,
		Message: fmt.Sprintf("%d subject(s) that are not cluster admins may create or change ClusterExtensions or ClusterCatalogs, which OLM v1 v1.11 treats as cluster-admin trust (operator-controller installs as cluster-admin): %s",
			len(found), strings.Join(found, "; ")),
		Fix: "remove those bindings' ClusterExtension and ClusterCatalog write verbs, or bind them only to cluster admins; " +
			"to hold the line in the API server, add a ValidatingAdmissionPolicy that refuses ClusterExtension writes by anyone without cluster-admin, as OLM v1's documentation shows"})
	return nil
}

// anyAllowed says whether the identity may do any of the probes.
func (d *doctor) anyAllowed(ctx context.Context, user string, groups []string, probes []*probe) (bool, error) {
	for _, p := range probes {
		ok, err := d.review(ctx, user, groups, p)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// bootstrapLabel marks the bindings the API server makes and keeps for
// Kubernetes' own components (kubernetes.io/bootstrapping=rbac-defaults).
const bootstrapLabel = "kubernetes.io/bootstrapping"

// bindingSubjects are the distinct subjects of the bindings, each with the
// bindings that name it, in a stable order. Left out: system:masters,
// cluster admin by definition, and the API server's default bindings of
// Kubernetes' own controllers (the garbage collector patches any object).
func bindingSubjects(crbs []rbacv1.ClusterRoleBinding) []writer {
	byKey := map[string]*writer{}
	for _, b := range crbs {
		if b.Labels[bootstrapLabel] == "rbac-defaults" {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.GroupKind && s.Name == "system:masters" {
				continue
			}
			key := s.Kind + "/" + s.Namespace + "/" + s.Name
			w, ok := byKey[key]
			if !ok {
				w = &writer{subject: s}
				byKey[key] = w
			}
			w.bindings = append(w.bindings, b.Name)
		}
	}
	out := make([]writer, 0, len(byKey))
	for _, w := range byKey {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b writer) int { return cmp.Compare(a.name(), b.name()) })
	return out
}
