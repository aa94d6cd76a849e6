package extension

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/olm"
)

// FindByPackage returns the ClusterExtensions that install pkg, sorted by
// name; none when the cluster does not serve OLM v1's API.
func FindByPackage(ctx context.Context, c client.Client, pkg string) ([]Extension, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GroupVersion.WithKind(ExtensionKind + "List"))
	if err := c.List(ctx, list); apimeta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("listing ClusterExtensions: %w", err)
	}
	var out []Extension
	for i := range list.Items {
		var ext Extension
		if err := fromUnstructured(&list.Items[i], &ext); err != nil {
			return nil, err
		}
		if f := ext.Spec.Source.Catalog; f != nil && f.PackageName == pkg {
			out = append(out, ext)
		}
	}
	slices.SortFunc(out, func(a, b Extension) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PickByPackage is the ClusterExtension of pkg whose install namespace is
// ns, else the only one of pkg; nil when there is none or the choice is
// not clear.
func PickByPackage(ctx context.Context, c client.Client, pkg, ns string) (*Extension, error) {
	exts, err := FindByPackage(ctx, c, pkg)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(exts, func(e Extension) bool { return e.Spec.Namespace == ns }); i >= 0 {
		return &exts[i], nil
	}
	if len(exts) == 1 {
		return &exts[0], nil
	}
	return nil, nil
}

// InsteadOfSubscription is the ClusterExtension that installs pkg when no
// Subscription in ns does, and the finding olm status (OLM v0) shows in
// place of "no Subscription": where it is and which command reports on
// it. The extension is nil when none installs pkg.
func InsteadOfSubscription(ctx context.Context, c client.Client, pkg, ns string) (*Extension, olm.Finding, error) {
	ext, err := PickByPackage(ctx, c, pkg, ns)
	if err != nil || ext == nil {
		return nil, olm.Finding{}, err
	}
	return ext, olm.Finding{Check: olm.CheckSubscription, Severity: olm.Fail, Object: "clusterextension/" + ext.Name,
		Message: fmt.Sprintf("no Subscription for package %s in namespace %s: OLM v1 installs it, as ClusterExtension %s (namespace %s)", pkg, ns, ext.Name, ext.Spec.Namespace),
		Fix:     fmt.Sprintf("chartpilot olm v1 status %s (and chartpilot doctor --extension %s)", ext.Name, ext.Name)}, nil
}
