package olm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// Under load OLM v0.46 can leave a ClusterRole of a CSV's clusterPermissions
// behind the CSV: a sync of the CSV racing its deletion makes it again after
// the csv-cleanup finalizer deleted it. Here the objects OLM would leave are
// made as the CSV goes (cluster-scoped, and a namespaced one without the
// owner reference the garbage collector follows): unsubscribe must remove
// them before it returns, and say so.
//
// OLM can also make the CSV again from the removed Subscription's
// InstallPlan, a sync racing the removal (seen under load): with no
// Subscription of the package left, unsubscribe deletes it again.
func TestUnsubscribeRemovesWhatOLMLeft(t *testing.T) {
	clustertest.SkipIfShort(t)
	for _, tc := range []struct {
		name     string
		csvAgain bool
	}{
		{"objects of the CSV", false},
		{"the CSV made again", true},
	} {
		t.Run(tc.name, func(t *testing.T) { unsubscribeWithLeftovers(t, tc.csvAgain) })
	}
}

func unsubscribeWithLeftovers(t *testing.T, csvAgain bool) {
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "leftover")
	b := olmtest.Bundle{Package: "leftover", Version: "0.1.0"}
	subscribe(t, c, ns, b)

	labels := olm.CSVOwnerLabels(b.CSVName(), ns)
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
	}
	role := "leftover-" + ns
	left := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: meta(role, ""), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta(role, ""), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: b.ServiceAccount(), Namespace: ns}}},
		&rbacv1.RoleBinding{ObjectMeta: meta(role, ns), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: b.ServiceAccount(), Namespace: ns}}},
	}
	t.Cleanup(func() {
		for _, o := range left {
			_ = c.Delete(context.Background(), o)
		}
	})
	if csvAgain {
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.CSVName()}, csv); err != nil {
			t.Fatal(err)
		}
		again := &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: csv.Name, Namespace: ns}, Spec: csv.Spec}
		left = append([]client.Object{again}, left...)
	}
	made := false
	opts := olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, Timeout: time.Minute}
	olm.SetAfterCSVsGone(&opts, func(ctx context.Context) error {
		for _, o := range left {
			err := c.Create(ctx, o)
			if _, isCSV := o.(*v1alpha1.ClusterServiceVersion); isCSV && apierrors.IsAlreadyExists(err) {
				continue // OLM made it again first, as it can
			}
			if err != nil {
				return err
			}
		}
		made = true
		return nil
	})
	res, err := olm.Unsubscribe(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !made {
		t.Fatal("the leftovers were never made: the hook did not run")
	}
	for _, o := range left {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s is still there when unsubscribe returned (%v)", o, o.GetName(), err)
		}
	}
	if names, err := olm.OwnedByCSV(ctx, c, b.CSVName(), ns); err != nil || len(names) > 0 {
		t.Errorf("still there when unsubscribe returned: %s (%v)", strings.Join(names, ", "), err)
	}
	notes := strings.Join(res.Notes, "\n")
	wants := []string{"deleted ClusterRole/" + role + ", which OLM made for " + b.CSVName(), "deleted ClusterRoleBinding/" + role}
	again := "deleted CSV " + b.CSVName() + " again: OLM made it again after its Subscription was removed"
	if csvAgain || strings.Contains(notes, again) {
		// The CSV made again (by the test, or by OLM itself racing the
		// removal) goes first; OLM's cleanup of it may take the
		// cluster-scoped objects with it, which are gone either way
		// (checked above).
		wants = []string{again}
	}
	for _, want := range wants {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
}
