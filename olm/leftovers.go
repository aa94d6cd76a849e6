package olm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownedKind is a kind OLM creates for a CSV and labels as the CSV's
// (csvOwnerSelector).
type ownedKind struct {
	kind string
	list func() client.ObjectList
	// cluster is true for cluster-scoped kinds: OLM's csv-cleanup
	// finalizer deletes them. The namespaced ones carry an owner reference
	// to the CSV, and the garbage collector deletes them.
	cluster bool
}

// csvOwnedKinds are the kinds OLM makes for a CSV: RBAC for its
// permissions and clusterPermissions (Roles in each target namespace, or
// ClusterRoles for AllNamespaces), its ServiceAccounts and Deployments, the
// Services and webhook configurations of its webhooks.
var csvOwnedKinds = []ownedKind{
	{"ClusterRole", func() client.ObjectList { return &rbacv1.ClusterRoleList{} }, true},
	{"ClusterRoleBinding", func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }, true},
	{"MutatingWebhookConfiguration", func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }, true},
	{"ValidatingWebhookConfiguration", func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }, true},
	{"Role", func() client.ObjectList { return &rbacv1.RoleList{} }, false},
	{"RoleBinding", func() client.ObjectList { return &rbacv1.RoleBindingList{} }, false},
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }, false},
	{"ServiceAccount", func() client.ObjectList { return &corev1.ServiceAccountList{} }, false},
	{"Service", func() client.ObjectList { return &corev1.ServiceList{} }, false},
}

// ErrLeftovers means objects OLM made for a removed CSV were still there when
// Unsubscribe stopped waiting for them.
var ErrLeftovers = errors.New("objects OLM made for the operator are still there")

// leftover is an object OLM made for a CSV that is gone.
type leftover struct {
	kind    string
	cluster bool
	obj     client.Object
}

func (l leftover) String() string {
	if l.obj.GetNamespace() == "" {
		return l.kind + "/" + l.obj.GetName()
	}
	return l.kind + " " + l.obj.GetNamespace() + "/" + l.obj.GetName()
}

// OwnedByCSV names the objects, in every namespace, that OLM made for the
// CSV name of namespace ns and labelled as its own ("ClusterRole/NAME",
// "Deployment NS/NAME"). Unsubscribe removes them all before it returns.
func OwnedByCSV(ctx context.Context, c client.Client, name, ns string) ([]string, error) {
	left, unreadable, err := listOwned(ctx, c, name, ns)
	if err != nil {
		return nil, err
	}
	if len(unreadable) > 0 {
		return nil, fmt.Errorf("listing the objects OLM made for CSV %s: forbidden to list %s", name, strings.Join(unreadable, ", "))
	}
	out := make([]string, 0, len(left))
	for _, o := range left {
		out = append(out, o.String())
	}
	return out, nil
}

// listOwned lists, in every namespace, the objects labelled as the CSV
// name's of namespace ns. Kinds the user may not list are named in
// unreadable instead.
func listOwned(ctx context.Context, c client.Client, name, ns string) (left []leftover, unreadable []string, err error) {
	for _, k := range csvOwnedKinds {
		list := k.list()
		if err := c.List(ctx, list, csvOwnerSelector(name, ns)); err != nil {
			if apierrors.IsForbidden(err) {
				unreadable = append(unreadable, k.kind)
				continue
			}
			return nil, nil, fmt.Errorf("listing the %ss OLM made for CSV %s: %w", k.kind, name, err)
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				left = append(left, leftover{kind: k.kind, cluster: k.cluster, obj: obj})
			}
		}
	}
	return left, unreadable, nil
}

// removeLeftovers makes sure nothing OLM made for the deleted csv outlives
// it. OLM's csv-cleanup finalizer deletes the cluster-scoped objects before
// the CSV goes, but a sync of the CSV racing its deletion can make them
// again just after (seen under load: a ClusterRole of the CSV's
// clusterPermissions left behind), and the garbage collector deletes the
// namespaced ones some time after the CSV. Once the CSV is gone everything
// labelled as its own is an orphan, whose RBAC a ServiceAccount made again
// under the same name would inherit: it is deleted here, and waited for,
// until Timeout.
func (u *unsubscriber) removeLeftovers(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	var (
		left, deleted []leftover
		unreadable    []string
		lastErr       error
	)
	pollErr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, u.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		again, err := u.csvAgain(ctx, csv)
		if err != nil {
			lastErr = err
			return false, nil
		}
		if again != nil {
			owned, err := u.subscribedAgain(ctx, csv.Namespace)
			if err != nil || owned {
				lastErr = err
				return owned, nil // another Subscription's now: its objects are its own
			}
			lastErr = u.deleteMadeAgain(ctx, again)
			return false, nil
		}
		l, ur, err := listOwned(ctx, u.c, csv.Name, csv.Namespace)
		if ctx.Err() != nil {
			return false, nil
		}
		if lastErr = err; err != nil {
			return false, nil // the next poll may be answered
		}
		left, unreadable = l, ur
		for _, o := range left {
			if err := u.c.Delete(ctx, o.obj, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
				lastErr = fmt.Errorf("deleting %s: %w", o, err)
				continue
			}
			if !slices.ContainsFunc(deleted, func(d leftover) bool { return d.obj.GetUID() == o.obj.GetUID() }) {
				deleted = append(deleted, o)
				u.recordLeftover(csv, o)
			}
		}
		return len(left) == 0, nil
	})
	if len(unreadable) > 0 {
		u.res.Notes = append(u.res.Notes, fmt.Sprintf("could not check that OLM's %s of %s are gone: you may not list them", strings.Join(unreadable, ", "), csv.Name))
	}
	if pollErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	names := make([]string, 0, len(left))
	for _, o := range left {
		desc := o.String()
		if f := o.obj.GetFinalizers(); len(f) > 0 {
			desc += " (finalizers " + strings.Join(f, ", ") + ")"
		}
		names = append(names, desc)
	}
	err := fmt.Errorf("%w %s after CSV %s was removed: %s", ErrLeftovers, u.opts.Timeout, csv.Name, strings.Join(names, ", "))
	if lastErr != nil {
		err = fmt.Errorf("%w\nlast error: %w", err, lastErr)
	}
	return err
}

// recordLeftover reports the deletion of o. A cluster-scoped one is a note
// too: OLM's cleanup missed it.
func (u *unsubscriber) recordLeftover(csv *v1alpha1.ClusterServiceVersion, o leftover) {
	r := ObjectResult{Kind: o.kind, Name: o.obj.GetName(), Namespace: o.obj.GetNamespace(), Action: ActionDeleted}
	u.res.Objects = append(u.res.Objects, r)
	u.logf("%s", r)
	if o.cluster {
		u.res.Notes = append(u.res.Notes, fmt.Sprintf("deleted %s, which OLM made for %s and left after removing it", o, csv.Name))
	}
}

// csvAgain returns the CSV named as csv in its namespace if it exists
// again (not the one deleted), else nil.
func (u *unsubscriber) csvAgain(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (*v1alpha1.ClusterServiceVersion, error) {
	cur := &v1alpha1.ClusterServiceVersion{}
	err := u.c.Get(ctx, client.ObjectKeyFromObject(csv), cur)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CSV %s: %w", csv.Name, err)
	}
	if cur.UID == csv.UID {
		return nil, nil
	}
	return cur, nil
}

// subscribedAgain reports whether a Subscription of the package exists in
// ns again: one made after this unsubscribe removed the package's.
func (u *unsubscriber) subscribedAgain(ctx context.Context, ns string) (bool, error) {
	sub, err := findSubscription(ctx, u.c, u.opts.Package, ns)
	return sub != nil, err
}

// deleteMadeAgain deletes a CSV that OLM v0 made again with no
// Subscription of the package left, and the InstallPlans that name it: a
// sync of the removed Subscription racing its deletion can execute its
// InstallPlan once more (seen under load), which would leave the operator
// installed when unsubscribe returns.
func (u *unsubscriber) deleteMadeAgain(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	var ips v1alpha1.InstallPlanList
	if err := u.c.List(ctx, &ips, client.InNamespace(csv.Namespace)); err != nil {
		return fmt.Errorf("listing InstallPlans: %w", err)
	}
	for i := range ips.Items {
		if ip := &ips.Items[i]; slices.Contains(ip.Spec.ClusterServiceVersionNames, csv.Name) {
			if err := u.c.Delete(ctx, ip); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting InstallPlan %s: %w", ip.Name, err)
			}
		}
	}
	if err := u.c.Delete(ctx, csv); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CSV %s, which OLM made again: %w", csv.Name, err)
	}
	if !slices.Contains(u.madeAgain, string(csv.UID)) {
		u.madeAgain = append(u.madeAgain, string(csv.UID))
		u.res.Notes = append(u.res.Notes, fmt.Sprintf("deleted CSV %s again: OLM made it again after its Subscription was removed", csv.Name))
		u.logf("CSV %s made again by OLM with no Subscription left: deleted", csv.Name)
	}
	return nil
}
