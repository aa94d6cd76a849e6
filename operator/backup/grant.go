package backup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// ReasonTargetNotGranted means a restore into another namespace found no
// <Kind>RestoreGrant there letting its own namespace in; nothing was
// written there.
const ReasonTargetNotGranted = "TargetNotGranted"

// granted tells whether a restore of namespace from may write into
// namespace into, given the restore grants of into: its own namespace
// always, another only when one of its grants names from. A Restore's
// author controls from's objects only, so the consent must come from
// into, whose admins alone can create grants there.
func granted(from, into string, grants []api.RestoreGrantSpec) bool {
	if into == "" || into == from {
		return true
	}
	for _, g := range grants {
		for _, f := range g.From {
			if f.Namespace == from {
				return true
			}
		}
	}
	return false
}

// notGrantedMessage says what is missing and what would let the restore in.
func notGrantedMessage(grantKind, from, into, why string) string {
	msg := fmt.Sprintf("namespace %s does not let Restores of namespace %s in: no %s there names it (create one in %s with spec.from: [{namespace: %s}]); nothing was written in %s",
		into, from, grantKind, into, from, into)
	if why != "" {
		msg += " (" + why + ")"
	}
	return msg
}

// checkGrant reads the restore grants of the namespace restored into and
// says, when the restore may not write there, why (a message for the
// status); an error is worth retrying. A grant kind the API server does
// not serve (a project scaffolded before grants) or may not be read by the
// operator (RBAC derived before grants) lets nothing in.
func (r *RestoreReconciler) checkGrant(ctx context.Context, from, into string) (string, error) {
	if into == "" || into == from {
		return "", nil // no grant to read
	}
	gvk := api.RestoreGrantKind(r.opts.Watched)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := r.opts.Reader.List(ctx, list, client.InNamespace(into))
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return notGrantedMessage(gvk.Kind, from, into, "the API server does not serve "+gvk.Kind+": regenerate the operator's CRDs"), nil
	case apierrors.IsForbidden(err):
		return notGrantedMessage(gvk.Kind, from, into, "the operator may not list "+gvk.Kind+"s there: a namespace it does not watch, or RBAC from before grants"), nil
	case err != nil:
		return "", fmt.Errorf("listing the %ss of namespace %s: %w", gvk.Kind, into, err)
	}
	grants := make([]api.RestoreGrantSpec, 0, len(list.Items))
	for _, u := range list.Items {
		var g api.RestoreGrantSpec
		m, ok := u.Object["spec"].(map[string]any)
		// A grant the schema let through but that does not decode grants nothing.
		if ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &g) == nil {
			grants = append(grants, g)
		}
	}
	if granted(from, into, grants) {
		return "", nil
	}
	return notGrantedMessage(gvk.Kind, from, into, ""), nil
}
