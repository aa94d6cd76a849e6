package olm

import (
	"context"
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// copiedFromLabel marks the copies of a CSV OLM makes in the namespaces an
// operator watches; they go when the original goes.
const copiedFromLabel = "olm.copiedFrom"

// bundleClusterLists are lists of the cluster-scoped kinds a bundle may ship
// besides its CRDs (the editor and viewer ClusterRoles of a scaffolded
// project). OLM labels what it creates from them olm.owner=<CSV> only, not
// with the owner kind and namespace its csv-cleanup finalizer selects on, so
// they outlive the CSV. The namespaced ones are owned by the CSV and go
// with it.
func bundleClusterLists() []client.ObjectList {
	return []client.ObjectList{&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &schedulingv1.PriorityClassList{}}
}

// deleteBundleClusterObjects deletes the cluster-scoped objects OLM created
// from the bundles of csvs, once the CSVs are gone, unless a CSV of the
// same name lives on in another namespace (an install of the same bundle
// there shares them).
func (u *unsubscriber) deleteBundleClusterObjects(ctx context.Context, csvs []*v1alpha1.ClusterServiceVersion) error {
	for _, csv := range csvs {
		if elsewhere, err := u.installedElsewhere(ctx, csv); err != nil || elsewhere != "" {
			why := "CSV " + csv.Name + " is installed in namespace " + elsewhere + " too"
			if err != nil {
				why = "could not check that no other namespace installs it: " + err.Error()
			}
			u.res.Notes = append(u.res.Notes, "kept the cluster-scoped objects of the bundle of "+csv.Name+" (labelled "+ownerLabel+"="+csv.Name+"): "+why)
			continue
		}
		for _, list := range bundleClusterLists() {
			if err := u.c.List(ctx, list, client.MatchingLabels{ownerLabel: csv.Name}); err != nil {
				return fmt.Errorf("listing the cluster-scoped objects of the bundle of %s: %w", csv.Name, err)
			}
			items, _ := meta.ExtractList(list)
			for _, item := range items {
				obj, ok := item.(client.Object)
				if !ok {
					continue
				}
				if _, olms := obj.GetLabels()[ownerKindLabel]; olms {
					continue // OLM's own, for the CSV's clusterPermissions: its finalizer deletes them
				}
				if err := u.delete(ctx, obj); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// installedElsewhere names another namespace holding a CSV named as csv that
// is not one of OLM's copies, or "".
func (u *unsubscriber) installedElsewhere(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (string, error) {
	var all v1alpha1.ClusterServiceVersionList
	if err := u.c.List(ctx, &all, client.MatchingFields{"metadata.name": csv.Name}); err != nil {
		return "", fmt.Errorf("listing the CSVs named %s in all namespaces: %w", csv.Name, err)
	}
	for _, other := range all.Items {
		if other.Name != csv.Name || other.Namespace == csv.Namespace {
			continue
		}
		if _, copied := other.Labels[copiedFromLabel]; !copied {
			return other.Namespace, nil
		}
	}
	return "", nil
}
