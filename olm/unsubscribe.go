package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/apply"
)

// ErrFinalizersPending means custom resources stayed after deletion because
// their finalizers did not run.
var ErrFinalizersPending = errors.New("custom resources wait for their finalizers")

// UnsubscribeOptions describe what to remove.
type UnsubscribeOptions struct {
	// Package and Namespace name the Subscription (by its spec.name). Required.
	Package, Namespace string
	// DeleteCRs deletes every custom resource of the CRDs the CSV owns, in
	// all namespaces, before the operator goes, so that it can run their
	// finalizers (for a Helm operator: uninstall each release).
	DeleteCRs bool
	// DeleteCRDs deletes the CRDs the CSV owns (after their custom
	// resources: it implies DeleteCRs).
	DeleteCRDs bool
	// ForceRemoveFinalizers removes the finalizers of custom resources still
	// there after Timeout (the operator is gone or broken). What their
	// finalizers would have cleaned up (a Helm release's objects) stays.
	// It also removes OLM's csv-cleanup finalizer from a CSV still there
	// after Timeout, but only when nothing is left for it to clean up.
	ForceRemoveFinalizers bool
	// Timeout bounds each wait for deletions; default 2 minutes.
	Timeout time.Duration
	// Out, if set, receives one line per step.
	Out io.Writer

	// afterCSVsGone, when set, runs once the CSVs are gone, before what OLM
	// made for them is checked: tests use it to leave what OLM may leave.
	afterCSVsGone func(context.Context) error
}

// UnsubscribeResult reports what Unsubscribe deleted.
type UnsubscribeResult struct {
	Objects []ObjectResult `json:"objects"`
	// Notes say what was left and why.
	Notes []string `json:"notes,omitempty"`
}

// Unsubscribe removes the package's operator: its custom resources (when
// asked) while the operator still runs, then the Subscription, the CSVs it
// installed (OLM then deletes the operator's Deployment, ServiceAccounts and
// RBAC; Unsubscribe waits for them to go, and deletes what OLM leaves), its
// InstallPlans, the CatalogSource and OperatorGroup that
// Subscribe created for it when nothing else uses them, and the CRDs (when
// asked).
func Unsubscribe(ctx context.Context, c client.Client, opts UnsubscribeOptions) (*UnsubscribeResult, error) {
	if opts.Package == "" || opts.Namespace == "" {
		return nil, errors.New("unsubscribe: the package and the namespace are required")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	opts.DeleteCRs = opts.DeleteCRs || opts.DeleteCRDs
	u := &unsubscriber{c: c, opts: opts, res: &UnsubscribeResult{}}
	return u.res, u.run(ctx)
}

type unsubscriber struct {
	c    client.Client
	opts UnsubscribeOptions
	res  *UnsubscribeResult
	// madeAgain are the UIDs of the CSVs OLM made again that this run
	// deleted, each noted once.
	madeAgain []string
}

func (u *unsubscriber) logf(format string, args ...any) {
	if u.opts.Out != nil {
		fmt.Fprintf(u.opts.Out, format+"\n", args...)
	}
}

func (u *unsubscriber) run(ctx context.Context) error {
	ns := u.opts.Namespace
	sub, err := findSubscription(ctx, u.c, u.opts.Package, ns)
	if err != nil {
		return err
	}
	if sub == nil {
		return u.finish(ctx)
	}
	var csvs []*v1alpha1.ClusterServiceVersion
	for _, name := range uniq(sub.Status.InstalledCSV, sub.Status.CurrentCSV) {
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := getOptional(ctx, u.c, client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
			return err
		}
		if csv.Name != "" {
			csvs = append(csvs, csv)
		}
	}
	// Marked as the package's, so that an unsubscribe run again after
	// this one stopped waiting finds them once the Subscription is gone.
	for _, csv := range csvs {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, PackageLabel, u.opts.Package)
		if err := u.c.Patch(ctx, csv, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("labelling CSV %s: %w", csv.Name, err)
		}
	}
	return u.remove(ctx, sub, csvs)
}

// finish completes an unsubscribe that stopped after it deleted the
// Subscription: it waits again for the CSVs it deleted (found by their
// PackageLabel), then removes the rest.
func (u *unsubscriber) finish(ctx context.Context) error {
	ns := u.opts.Namespace
	var list v1alpha1.ClusterServiceVersionList
	if err := u.c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{PackageLabel: u.opts.Package}); err != nil {
		return fmt.Errorf("listing CSVs: %w", err)
	}
	var csvs []*v1alpha1.ClusterServiceVersion
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			csvs = append(csvs, &list.Items[i])
		}
	}
	if len(csvs) == 0 {
		return fmt.Errorf("%w %s in namespace %s", ErrNotSubscribed, u.opts.Package, ns)
	}
	return u.remove(ctx, nil, csvs)
}

// remove deletes what the package installed: sub (when not already gone)
// and csvs, with their custom resources, InstallPlans, CatalogSource,
// OperatorGroup and CRDs as asked.
func (u *unsubscriber) remove(ctx context.Context, sub *v1alpha1.Subscription, csvs []*v1alpha1.ClusterServiceVersion) error {
	ns := u.opts.Namespace
	var crds []string
	for _, csv := range csvs {
		for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
			if !slices.Contains(crds, d.Name) {
				crds = append(crds, d.Name)
			}
		}
	}
	if u.opts.DeleteCRs {
		if err := u.deleteCRs(ctx, crds); err != nil {
			return err
		}
	}

	var ips v1alpha1.InstallPlanList
	if err := u.c.List(ctx, &ips, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing InstallPlans: %w", err)
	}
	for i := range ips.Items {
		ip := &ips.Items[i]
		for _, csv := range csvs {
			if slices.Contains(ip.Spec.ClusterServiceVersionNames, csv.Name) {
				if err := u.delete(ctx, ip); err != nil {
					return err
				}
				break
			}
		}
	}
	// The InstallPlans first: the Subscription owns them, and once it is
	// gone the garbage collector races us for them.
	if sub != nil {
		if err := u.delete(ctx, sub); err != nil {
			return err
		}
	}
	for _, csv := range csvs {
		if err := u.delete(ctx, csv); err != nil {
			return err
		}
	}
	for _, csv := range csvs {
		if err := u.waitCSVGone(ctx, csv); err != nil {
			return err
		}
	}
	if u.opts.afterCSVsGone != nil {
		if err := u.opts.afterCSVsGone(ctx); err != nil {
			return err
		}
	}
	for _, csv := range csvs {
		if err := u.removeLeftovers(ctx, csv); err != nil {
			return err
		}
	}
	if err := u.deleteBundleClusterObjects(ctx, csvs); err != nil {
		return err
	}
	if err := u.deleteOwnedSetup(ctx, sub); err != nil {
		return err
	}
	if u.opts.DeleteCRDs {
		for _, name := range crds {
			if err := u.delete(ctx, &apiextensionsv1.CustomResourceDefinition{}, name); err != nil {
				return err
			}
		}
	} else if len(crds) > 0 {
		u.res.Notes = append(u.res.Notes, "kept the CRDs "+strings.Join(crds, ", ")+" and their custom resources (--delete-crds removes them)")
	}
	return nil
}

// deleteOwnedSetup deletes the CatalogSource and OperatorGroup Subscribe
// created for this package, unless another Subscription still uses them;
// sub, if not gone already, is the package's, about to go.
func (u *unsubscriber) deleteOwnedSetup(ctx context.Context, sub *v1alpha1.Subscription) error {
	ns := u.opts.Namespace
	var subs v1alpha1.SubscriptionList
	if err := u.c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing Subscriptions: %w", err)
	}
	others := slices.DeleteFunc(subs.Items, func(s v1alpha1.Subscription) bool {
		return (sub != nil && s.Name == sub.Name) || (s.Spec != nil && s.Spec.Package == u.opts.Package)
	})
	ours := client.MatchingLabels{ManagedByLabel: apply.FieldManager, PackageLabel: u.opts.Package}

	var sources v1alpha1.CatalogSourceList
	if err := u.c.List(ctx, &sources, client.InNamespace(ns), ours); err != nil {
		return fmt.Errorf("listing CatalogSources: %w", err)
	}
	for i := range sources.Items {
		cs := &sources.Items[i]
		used := slices.ContainsFunc(others, func(s v1alpha1.Subscription) bool {
			return s.Spec != nil && s.Spec.CatalogSource == cs.Name && (s.Spec.CatalogSourceNamespace == "" || s.Spec.CatalogSourceNamespace == ns)
		})
		if used {
			u.res.Notes = append(u.res.Notes, "kept catalogsource/"+cs.Name+": other Subscriptions use it")
			continue
		}
		if err := u.delete(ctx, cs); err != nil {
			return err
		}
	}
	var ogs operatorsv1.OperatorGroupList
	if err := u.c.List(ctx, &ogs, client.InNamespace(ns), ours); err != nil {
		return fmt.Errorf("listing OperatorGroups: %w", err)
	}
	for i := range ogs.Items {
		if len(others) > 0 {
			u.res.Notes = append(u.res.Notes, "kept operatorgroup/"+ogs.Items[i].Name+": other Subscriptions are in the namespace")
			continue
		}
		if err := u.delete(ctx, &ogs.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// deleteCRs deletes every custom resource of crds and waits for them to go,
// all at once, removing finalizers after the timeout only when told to.
func (u *unsubscriber) deleteCRs(ctx context.Context, crds []string) error {
	var pending []*unstructured.Unstructured
	for _, name := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := getOptional(ctx, u.c, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		if crd.Name == "" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Version: storageVersion(crd)}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := u.c.List(ctx, list); err != nil {
			return fmt.Errorf("listing %s: %w", crd.Spec.Names.Plural, err)
		}
		for i := range list.Items {
			cr := &list.Items[i]
			cr.SetGroupVersionKind(gvk)
			if err := u.delete(ctx, cr); err != nil {
				return err
			}
			pending = append(pending, cr)
		}
	}
	// Wait for the operator to run the finalizers of all of them. An error
	// reading them does not end the wait (the API server may answer the
	// next poll); the last one is reported if the wait ends.
	var lastErr error
	pollErr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, u.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		left, err := u.remaining(ctx, pending)
		if ctx.Err() != nil {
			return false, nil // the wait is over, not this poll's reads
		}
		if err != nil {
			lastErr = err
			return false, nil
		}
		pending, lastErr = left, nil
		return len(pending) == 0, nil
	})
	if pollErr == nil || len(pending) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var stuck []string
	for _, cr := range pending {
		desc := fmt.Sprintf("%s %s/%s (finalizers %s)", cr.GetKind(), cr.GetNamespace(), cr.GetName(), strings.Join(cr.GetFinalizers(), ", "))
		if !u.opts.ForceRemoveFinalizers {
			stuck = append(stuck, desc)
			continue
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if err := u.c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of %s: %w", desc, err)
		}
		u.res.Notes = append(u.res.Notes, "removed the finalizers of "+desc+": what they clean up (the Helm release's objects) may be left")
		if err := u.waitGone(ctx, cr); err != nil {
			return fmt.Errorf("%s still there after removing its finalizers: %w", desc, err)
		}
	}
	if len(stuck) > 0 {
		err := fmt.Errorf("%w after %s: %s\nThe operator runs these finalizers (for a Helm operator: uninstalling the release); it is not running or failing. "+
			"Start it (or fix it) and run unsubscribe again, or pass --force-remove-finalizers to drop them, leaving what they would clean up",
			ErrFinalizersPending, u.opts.Timeout, strings.Join(stuck, "; "))
		if lastErr != nil {
			err = fmt.Errorf("%w\nlast error reading them: %w", err, lastErr)
		}
		return err
	}
	return nil
}

// remaining returns the latest version of the objects of crs that still exist.
func (u *unsubscriber) remaining(ctx context.Context, crs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, cr := range crs {
		latest := &unstructured.Unstructured{}
		latest.SetGroupVersionKind(cr.GroupVersionKind())
		err := u.c.Get(ctx, client.ObjectKeyFromObject(cr), latest)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return crs, err
		}
		out = append(out, latest)
	}
	return out, nil
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// delete deletes obj (by name, when given, for a cluster-scoped kind) and
// records it; an object already gone is fine.
func (u *unsubscriber) delete(ctx context.Context, obj client.Object, name ...string) error {
	if len(name) == 1 {
		obj.SetName(name[0])
	}
	kind := kindOf(u.c, obj)
	err := u.c.Delete(ctx, obj, client.PropagationPolicy("Background"))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
	}
	r := ObjectResult{Kind: kind, Name: obj.GetName(), Namespace: obj.GetNamespace(), Action: ActionDeleted}
	u.res.Objects = append(u.res.Objects, r)
	u.logf("%s", r)
	return nil
}

func kindOf(c client.Client, obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// waitGone waits until obj no longer exists; a timeout's error names the
// finalizers left on it.
func (u *unsubscriber) waitGone(ctx context.Context, obj client.Object) error {
	probe, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("cannot copy %T", obj)
	}
	var finalizers []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, u.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		err := u.c.Get(ctx, client.ObjectKeyFromObject(obj), probe)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		finalizers = probe.GetFinalizers()
		return false, nil
	})
	if err != nil && len(finalizers) > 0 {
		return fmt.Errorf("%w (finalizers %s)", err, strings.Join(finalizers, ", "))
	}
	return err
}

// uniq returns the non-empty strings of ss, once each, in order.
func uniq(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
