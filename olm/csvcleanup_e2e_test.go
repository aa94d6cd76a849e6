package olm_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// OLM v0.46 loses a deleted CSV when its update removing the csv-cleanup
// finalizer fails once (see olm.CSVCleanupFinalizer): it does not look at
// the CSV again before its resync, minutes later. Here an admission policy
// makes that update fail, as a timeout of a loaded API server would, and is
// lifted as soon as OLM's log shows the failure. Unsubscribe sees OLM's
// cleanup done and its finalizer kept, wakes OLM, and the CSV goes; without
// the wake-up it stays.
func TestUnsubscribeWakesOLMThatLostTheCSV(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "wake")
	b := olmtest.Bundle{Package: "wake", Version: "0.1.0"}
	subscribe(t, c, ns, b)

	lift := holdCSVCleanup(t, c, client.ObjectKey{Namespace: ns, Name: b.CSVName()})
	olmLog := env.Cluster.LogFile(cluster.OLM)
	logStart := fileSize(t, olmLog)
	failed := regexp.MustCompile(`msg="Removing finalizer" csv=` + regexp.QuoteMeta(b.CSVName()) + ` error=".*'hold-csv-cleanup-` + regexp.QuoteMeta(ns) + `'`)
	lifted := make(chan time.Time, 1)
	go func() {
		defer close(lifted)
		// Lift the hold once OLM's update has failed.
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			data, err := os.ReadFile(olmLog)
			return err == nil && int64(len(data)) > logStart && failed.Match(data[logStart:]), nil
		})
		if err != nil {
			t.Errorf("OLM's log shows no failed update of %s's finalizer: %v", b.CSVName(), err)
		}
		lift()
		lifted <- time.Now()
	}()

	var out strings.Builder
	began := time.Now()
	_, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, Timeout: time.Minute, Out: &out})
	t.Logf("unsubscribe in %s:\n%s", time.Since(began).Round(100*time.Millisecond), out.String())
	if err != nil {
		t.Fatal(err)
	}
	at, ok := <-lifted
	if !ok {
		t.Fatal("the hold was not lifted")
	}
	t.Logf("the CSV went %s after OLM could remove its finalizer again", time.Since(at).Round(100*time.Millisecond))
	if !strings.Contains(out.String(), "clusterserviceversion/"+b.CSVName()+": OLM did its cleanup but kept its finalizer "+olm.CSVCleanupFinalizer+"; woke it") {
		t.Error("the CSV went without a wake-up: OLM did not lose it")
	}
}

// Why Unsubscribe wakes OLM: after one failed update removing its
// csv-cleanup finalizer, OLM v0.46 leaves the deleted CSV alone, though
// the update would now succeed and nothing is left to clean up.
func TestOLMLosesCSVAfterFailedFinalizerUpdate(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "lost")
	b := olmtest.Bundle{Package: "lost", Version: "0.1.0"}
	subscribe(t, c, ns, b)
	key := client.ObjectKey{Namespace: ns, Name: b.CSVName()}
	lift := holdCSVCleanup(t, c, key)
	olmLog := env.Cluster.LogFile(cluster.OLM)
	logStart := fileSize(t, olmLog)
	failed := regexp.MustCompile(`msg="Removing finalizer" csv=` + regexp.QuoteMeta(b.CSVName()) + ` error=".*'hold-csv-cleanup-` + regexp.QuoteMeta(ns) + `'`)

	csv := &v1alpha1.ClusterServiceVersion{}
	if err := c.Get(ctx, key, csv); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, csv); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(olmLog)
		return err == nil && int64(len(data)) > logStart && failed.Match(data[logStart:]), nil
	})
	if err != nil {
		t.Fatalf("OLM's log shows no failed update of %s's finalizer: %v", b.CSVName(), err)
	}
	lift()
	const watched = 15 * time.Second
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, watched, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, csv)
		return apierrors.IsNotFound(err), nil
	})
	if err == nil {
		t.Fatal("OLM removed its finalizer on its own: it no longer loses a CSV whose update failed, and Unsubscribe need not wake it")
	}
	t.Logf("%s kept %v for %s after its update could succeed", b.CSVName(), csv.Finalizers, watched)
	// An update of the CSV makes OLM look again.
	patch := []byte(`{"metadata":{"annotations":{"` + olm.WokenAnnotation + `":"test"}}}`)
	if err := c.Patch(ctx, csv, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, csv)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the CSV is still there after an update woke OLM: %v", err)
	}
}

// When OLM never removes its finalizer, Unsubscribe says what is left and
// what to do; with --force-remove-finalizers it removes the finalizer (OLM
// had nothing left to clean up) and finishes.
func TestUnsubscribeCSVStuck(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "stuck")
	b := olmtest.Bundle{Package: "stuck", Version: "0.1.0"}
	subscribe(t, c, ns, b)
	holdCSVCleanup(t, c, client.ObjectKey{Namespace: ns, Name: b.CSVName()}, "chartpilot:olm")

	_, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, Timeout: 15 * time.Second})
	var stuck *olm.CSVStuckError
	if !errors.As(err, &stuck) {
		t.Fatalf("unsubscribe: %v, want a CSVStuckError", err)
	}
	t.Logf("unsubscribe: %v", err)
	for _, want := range []string{"has not removed its finalizer " + olm.CSVCleanupFinalizer, "asked", "--force-remove-finalizers", "kubectl patch clusterserviceversion " + b.CSVName() + " -n " + ns} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q", want)
		}
	}

	// Run again, it finds the CSV it deleted though the Subscription is gone.
	var out strings.Builder
	res, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, Timeout: 5 * time.Second, ForceRemoveFinalizers: true, Out: &out})
	if err != nil {
		t.Fatalf("unsubscribe --force-remove-finalizers: %v\n%s", err, out.String())
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "removed the finalizer "+olm.CSVCleanupFinalizer+" of clusterserviceversion/"+b.CSVName()) {
		t.Errorf("notes %q lack the removed finalizer", res.Notes)
	}
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.CSVName()}, csv); !apierrors.IsNotFound(err) {
		t.Errorf("the CSV is still there: %v", err)
	}
}

// subscribe installs bundle b in ns through OLM and waits for its CSV.
func subscribe(t *testing.T, c client.Client, ns string, b olmtest.Bundle) {
	t.Helper()
	ctx := context.Background()
	addr := olmtest.Serve(t, olmtest.Catalog(t, b))
	info, err := olm.LookupBundle(ctx, addr, b.Package, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: b.Package, Namespace: ns, CatalogAddress: addr, SupportedModes: info.InstallModes}); err != nil {
		t.Fatal(err)
	}
	if _, err := olm.Wait(ctx, c, b.Package, ns, olm.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// holdCSVCleanup makes updates that remove OLM's csv-cleanup finalizer from
// a CSV in csv's namespace fail (updates by users, when given) until the
// returned func is called or the test ends.
func holdCSVCleanup(t *testing.T, c client.Client, csv client.ObjectKey, users ...string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	ns := csv.Namespace
	name := "hold-csv-cleanup-" + ns
	expr := `!(has(oldObject.metadata.finalizers) && '` + olm.CSVCleanupFinalizer + `' in oldObject.metadata.finalizers &&
	  !(has(object.metadata.finalizers) && '` + olm.CSVCleanupFinalizer + `' in object.metadata.finalizers))`
	if len(users) > 0 {
		expr = `!(request.userInfo.username in ['` + strings.Join(users, `', '`) + `']) || ` + expr
	}
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"operators.coreos.com"}, APIVersions: []string{"*"}, Resources: []string{"clusterserviceversions"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: "exp-hold-csv-cleanup: the test holds OLM's finalizer"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	lift = func() {
		for _, obj := range []client.Object{binding, policy} {
			if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("lifting the hold: %v", err)
			}
		}
	}
	t.Cleanup(lift)
	// The API server applies a new policy once its informer has it.
	user := ""
	if len(users) > 0 {
		user = users[0]
	}
	waitPolicyActive(t, c, csv, user)
	return lift
}

// waitPolicyActive waits until the hold refuses a dry run of an update
// that removes the finalizer of csv (as user, when given: the test's user
// may impersonate).
func waitPolicyActive(t *testing.T, c client.Client, csv client.ObjectKey, user string) {
	t.Helper()
	ctx := context.Background()
	as := c
	if user != "" {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
		var err error
		if as, err = olm.NewClient(cfg); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cur := &v1alpha1.ClusterServiceVersion{}
		if err := as.Get(ctx, csv, cur); err != nil {
			return false, err
		}
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == olm.CSVCleanupFinalizer })
		err := as.Update(ctx, cur, client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("the hold on %s's csv-cleanup finalizer is not in force: %v", csv, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
