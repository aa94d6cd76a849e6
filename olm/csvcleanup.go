package olm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CSVCleanupFinalizer is the finalizer OLM's olm operator puts on every CSV.
// When the CSV is deleted, OLM deletes the cluster-scoped objects labelled
// as the CSV's (ClusterRoles and ClusterRoleBindings of its
// clusterPermissions, webhook configurations), checks in its informer caches
// that the ClusterRoles and ClusterRoleBindings are gone, and removes the
// finalizer.
//
// OLM v0.46 can lose a CSV in that last step: it removes the finalizer from
// the CSV in its informer cache before it sends the update, so when the
// update fails (a timeout or a throttled request on a loaded API server),
// its retry finds no finalizer in the cache, stops, and the CSV keeps the
// finalizer until the next event on it or OLM's resync (every 5 minutes).
// Unsubscribe watches for that state: OLM's cleanup done, the finalizer
// still there. It then updates the CSV (an annotation), which refreshes
// OLM's cache and requeues the CSV.
const CSVCleanupFinalizer = "operators.coreos.com/csv-cleanup"

// WokenAnnotation is set on a deleted CSV whose cleanup OLM finished without
// removing its finalizer, to make OLM look at the CSV again.
const WokenAnnotation = "olm.chartpilot.io/woken"

// Labels OLM puts on what it creates for a CSV (operator-lifecycle-manager
// pkg/lib/ownerutil); its csv-cleanup finalizer deletes the cluster-scoped
// objects that carry all three.
const (
	ownerLabel          = "olm.owner"
	ownerKindLabel      = "olm.owner.kind"
	ownerNamespaceLabel = "olm.owner.namespace"
)

// csvOwnerSelector selects what OLM's csv-cleanup finalizer deletes for the
// CSV name in namespace ns.
func csvOwnerSelector(name, ns string) client.MatchingLabels {
	return client.MatchingLabels{ownerLabel: name, ownerKindLabel: v1alpha1.ClusterServiceVersionKind, ownerNamespaceLabel: ns}
}

// csvLeft is what is left of a CSV Unsubscribe deleted.
type csvLeft struct {
	// Gone: the CSV no longer exists.
	Gone bool
	// Finalizers still on the CSV.
	Finalizers []string
	// Owned names the cluster-scoped objects OLM's csv-cleanup finalizer
	// deletes that are still there, as "ClusterRole/NAME".
	Owned []string
	// OwnedUnknown: they could not be listed (the user may not read them).
	OwnedUnknown bool
}

// cleanedUp reports whether OLM's csv-cleanup finalizer is the CSV's only
// one and has nothing left to delete: OLM has done its cleanup but not
// removed the finalizer.
func (l csvLeft) cleanedUp() bool {
	return !l.Gone && !l.OwnedUnknown && len(l.Owned) == 0 && len(l.Finalizers) == 1 && l.Finalizers[0] == CSVCleanupFinalizer
}

// Timing of the wait for a deleted CSV.
const (
	// wakeAfter is how long the CSV stays in the cleaned-up state before it
	// is woken: OLM removes its finalizer within a second of its cleanup
	// when nothing fails.
	wakeAfter = 3 * time.Second
	// wakeEvery is the least time between two wake-ups.
	wakeEvery = 10 * time.Second
)

// shouldWake decides whether to wake OLM about a CSV left as left: it has
// been cleaned up for cleanedFor, and the last wake-up was sinceWake ago
// (never: a negative duration).
func shouldWake(left csvLeft, cleanedFor, sinceWake time.Duration) bool {
	return left.cleanedUp() && cleanedFor >= wakeAfter && (sinceWake < 0 || sinceWake >= wakeEvery)
}

// observeCSV reads what is left of the deleted CSV csv.
func (u *unsubscriber) observeCSV(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (csvLeft, error) {
	cur := &v1alpha1.ClusterServiceVersion{}
	err := u.c.Get(ctx, client.ObjectKeyFromObject(csv), cur)
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != csv.UID && csv.UID != "") {
		// Gone, or gone and made again (by a Subscription elsewhere).
		return csvLeft{Gone: true}, nil
	}
	if err != nil {
		return csvLeft{}, fmt.Errorf("reading CSV %s: %w", csv.Name, err)
	}
	left := csvLeft{Finalizers: cur.Finalizers}
	if !slices.Contains(cur.Finalizers, CSVCleanupFinalizer) {
		return left, nil
	}
	sel := csvOwnerSelector(csv.Name, csv.Namespace)
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"ClusterRole", &rbacv1.ClusterRoleList{}},
		{"ClusterRoleBinding", &rbacv1.ClusterRoleBindingList{}},
		{"MutatingWebhookConfiguration", &admissionregistrationv1.MutatingWebhookConfigurationList{}},
		{"ValidatingWebhookConfiguration", &admissionregistrationv1.ValidatingWebhookConfigurationList{}},
	}
	for _, l := range lists {
		if err := u.c.List(ctx, l.list, sel); err != nil {
			left.OwnedUnknown, left.Owned = true, nil
			return left, fmt.Errorf("listing the %ss of CSV %s: %w", l.kind, csv.Name, err)
		}
		for _, name := range objectNames(l.list) {
			left.Owned = append(left.Owned, l.kind+"/"+name)
		}
	}
	return left, nil
}

func objectNames(list client.ObjectList) []string {
	items, _ := meta.ExtractList(list)
	names := make([]string, 0, len(items))
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names
}

// waitCSVGone waits until the deleted CSV csv is gone: OLM's olm operator
// has run its csv-cleanup finalizer. It wakes OLM when OLM finished its
// cleanup without removing the finalizer (see CSVCleanupFinalizer); with
// ForceRemoveFinalizers it removes that finalizer itself after Timeout,
// only then. A timeout's error says what is left and what to do.
func (u *unsubscriber) waitCSVGone(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	var (
		left        csvLeft
		lastErr     error
		cleanedAt   time.Time // since when left.cleanedUp()
		wokenAt     time.Time
		wakes       int
		began       = time.Now()
		sinceOrNone = func(t time.Time) time.Duration {
			if t.IsZero() {
				return -1
			}
			return time.Since(t)
		}
	)
	pollErr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, u.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		l, err := u.observeCSV(ctx, csv)
		if ctx.Err() != nil {
			return false, nil // the wait is over, not this poll's reads
		}
		lastErr = err
		if err != nil && !l.OwnedUnknown {
			// An API server too loaded to answer now may answer on the
			// next poll; the error is reported if the wait ends.
			return false, nil
		}
		left = l
		if left.Gone {
			return true, nil
		}
		if !left.cleanedUp() {
			cleanedAt = time.Time{}
			return false, nil
		}
		if cleanedAt.IsZero() {
			cleanedAt = time.Now()
		}
		if shouldWake(left, time.Since(cleanedAt), sinceOrNone(wokenAt)) {
			wokenAt = time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, WokenAnnotation, wokenAt.UTC().Format(time.RFC3339Nano))
			if err := u.c.Patch(ctx, csv, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
				lastErr = fmt.Errorf("waking OLM about CSV %s: %w", csv.Name, err)
				return false, nil
			}
			wakes++
			u.logf("clusterserviceversion/%s: OLM did its cleanup but kept its finalizer %s; woke it (an annotation update)", csv.Name, CSVCleanupFinalizer)
		}
		return false, nil
	})
	if pollErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if u.opts.ForceRemoveFinalizers && left.cleanedUp() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if err := u.c.Patch(ctx, csv, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizer %s of CSV %s: %w", CSVCleanupFinalizer, csv.Name, err)
		}
		u.res.Notes = append(u.res.Notes, fmt.Sprintf("removed the finalizer %s of clusterserviceversion/%s: OLM had done its cleanup but not removed it in %s",
			CSVCleanupFinalizer, csv.Name, u.opts.Timeout))
		return u.waitGone(ctx, csv)
	}
	return &CSVStuckError{CSV: csv.Name, Namespace: csv.Namespace, Waited: time.Since(began).Round(time.Second), Left: left, Wakes: wakes, LastErr: lastErr}
}

// CSVStuckError says that a deleted CSV was still there when Unsubscribe
// stopped waiting, what was left of it and what the user can do.
type CSVStuckError struct {
	CSV, Namespace string
	Waited         time.Duration
	Left           csvLeft
	// Wakes counts the updates that asked OLM to look at the CSV again.
	Wakes int
	// LastErr is the last error reading the CSV or waking OLM, if the last
	// poll failed.
	LastErr error
}

func (e *CSVStuckError) Unwrap() error { return e.LastErr }

func (e *CSVStuckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CSV %s in %s is still there %s after its deletion", e.CSV, e.Namespace, e.Waited)
	l := e.Left
	switch {
	case l.Gone || (len(l.Finalizers) == 0 && e.LastErr != nil):
		// Not read since the last error.
	case len(l.Finalizers) == 0:
		b.WriteString(" without finalizers: the API server has not finished deleting it")
	case !slices.Contains(l.Finalizers, CSVCleanupFinalizer):
		fmt.Fprintf(&b, ": its finalizers %s are not OLM's; the controllers that put them there remove them", strings.Join(l.Finalizers, ", "))
	case l.OwnedUnknown:
		fmt.Fprintf(&b, ": its finalizer %s is OLM's olm operator's, which deletes the ClusterRoles, ClusterRoleBindings and webhook configurations labelled %s=%s (they could not be listed)", CSVCleanupFinalizer, ownerLabel, e.CSV)
	case len(l.Owned) > 0:
		fmt.Fprintf(&b, ": OLM's olm operator has not finished its cleanup (finalizer %s); still there: %s.\n", CSVCleanupFinalizer, strings.Join(l.Owned, ", "))
		b.WriteString("Check that OLM's olm operator runs (on the local cluster: chartpilot cluster status; elsewhere: kubectl get deployment olm-operator -n olm) and read its log, then run unsubscribe again")
	default:
		fmt.Fprintf(&b, ": OLM's olm operator deleted what the CSV owned but has not removed its finalizer %s", CSVCleanupFinalizer)
		if e.Wakes > 0 {
			fmt.Fprintf(&b, " (asked %d times to look at it again)", e.Wakes)
		}
		b.WriteString(".\nIs OLM's olm operator running? (on the local cluster: chartpilot cluster status; elsewhere: kubectl get deployment olm-operator -n olm; its log says why.) ")
		fmt.Fprintf(&b, "Nothing of the CSV's is left to clean up: run unsubscribe again with --force-remove-finalizers, or remove the finalizer yourself:\n"+
			"  kubectl patch clusterserviceversion %s -n %s --type=merge -p '{\"metadata\":{\"finalizers\":null}}'", e.CSV, e.Namespace)
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, "\nlast error: %v", e.LastErr)
	}
	return b.String()
}
