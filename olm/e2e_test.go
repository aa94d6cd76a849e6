package olm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cmd/cli"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

var env *clustertest.Env

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, &env)) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := olm.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chartpilot runs the CLI against the test cluster.
func chartpilot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := cli.NewRootCommand(streams)
	// The kubectl flags belong to the commands that reach a cluster, not
	// to the root: they follow the command's name, where it has them.
	if sub, _, err := cmd.Find(args); err == nil && sub.Flags().Lookup("kubeconfig") != nil {
		args = append(args, "--kubeconfig", env.Kubeconfig)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

// The whole journey: subscribe (twice: nothing changes), wait for the CSV,
// status, then unsubscribe, which first refuses to leave custom resources
// hanging on finalizers and then removes everything with the flags.
func TestSubscribeStatusUnsubscribe(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "olm")
	b := olmtest.Bundle{Package: "journey", Version: "0.1.0"}
	addr := olmtest.Serve(t, olmtest.Catalog(t, b))

	info, err := olm.LookupBundle(ctx, addr, b.Package, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if info.CSV != b.CSVName() || info.Channel != "stable" || !info.InstallModes[v1alpha1.InstallModeTypeOwnNamespace] || info.InstallModes[v1alpha1.InstallModeTypeSingleNamespace] {
		t.Errorf("LookupBundle = %+v", info)
	}
	opts := olm.SubscribeOptions{Package: b.Package, Namespace: ns, CatalogAddress: addr, SupportedModes: info.InstallModes}
	began := time.Now()
	res, err := olm.Subscribe(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(res); got != "CatalogSource created, OperatorGroup created, Subscription created" {
		t.Errorf("first subscribe: %s", got)
	}
	if res.InstallMode != v1alpha1.InstallModeTypeOwnNamespace {
		t.Errorf("install mode %s, want OwnNamespace", res.InstallMode)
	}
	res, err = olm.Subscribe(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(res); got != "CatalogSource unchanged, OperatorGroup reused, Subscription unchanged" {
		t.Errorf("second subscribe: %s", got)
	}

	var progress []string
	r, err := olm.Wait(ctx, c, b.Package, ns, olm.WaitOptions{Timeout: 2 * time.Minute, Progress: func(r *olm.Report) { progress = append(progress, r.Summary()) }})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, strings.Join(progress, "\n"))
	}
	t.Logf("Subscription to CSV Succeeded: %s, progress:\n  %s", time.Since(began).Round(100*time.Millisecond), strings.Join(progress, "\n  "))
	if !r.Installed || r.CSV.Name != b.CSVName() {
		t.Errorf("report after Wait: installed %v, csv %+v", r.Installed, r.CSV)
	}
	var og operatorsv1.OperatorGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Package}, &og); err != nil {
		t.Fatal(err)
	}
	if len(og.Status.Namespaces) != 1 || og.Status.Namespaces[0] != ns {
		t.Errorf("OperatorGroup targets %v, want [%s]", og.Status.Namespaces, ns)
	}

	// OLM marks the InstallPlan Complete a little after the CSV succeeds.
	ipBegan := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := olm.Observe(ctx, c, b.Package, ns)
		return err == nil && o.InstallPlan != nil && o.InstallPlan.Status.Phase == v1alpha1.InstallPlanPhaseComplete, err
	})
	if err != nil {
		t.Fatalf("InstallPlan not Complete a minute after the CSV Succeeded: %v", err)
	}
	t.Logf("InstallPlan Complete %s after the CSV Succeeded", time.Since(ipBegan).Round(100*time.Millisecond))

	// The bundle's own ClusterRole, which OLM labels with its CSV only.
	var editor rbacv1.ClusterRole
	if err := c.Get(ctx, client.ObjectKey{Name: b.EditorRole()}, &editor); err != nil || editor.Labels["olm.owner"] != b.CSVName() {
		t.Fatalf("the bundle's ClusterRole %s: %v, labels %v", b.EditorRole(), err, editor.Labels)
	}

	out, err := chartpilot(t, "olm", "status", b.Package, "-n", ns)
	if err != nil {
		t.Fatalf("olm status: %v\n%s", err, out)
	}
	for _, want := range []string{"package journey in namespace " + ns + ": installed (journey.v0.1.0)", "pass  CatalogSource connection", "READY (" + addr + ")", "AtLatestKnown, installed journey.v0.1.0", "Complete (journey.v0.1.0)", "Succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	// A custom resource whose finalizer nobody runs: the operator's pods
	// are simulated here, as if the operator were broken.
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": b.Group() + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns, "finalizers": []any{"helm.sdk.operatorframework.io/uninstall-release"}},
	}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	_, err = olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns, DeleteCRs: true, Timeout: 3 * time.Second})
	if !errors.Is(err, olm.ErrFinalizersPending) || !strings.Contains(err.Error(), "Widget "+ns+"/w (finalizers helm.sdk.operatorframework.io/uninstall-release)") || !strings.Contains(err.Error(), "--force-remove-finalizers") {
		t.Fatalf("unsubscribe with a stuck finalizer: %v", err)
	}
	if o, _ := olm.Observe(ctx, c, b.Package, ns); o.Subscription == nil || !o.Installed() {
		t.Fatal("the refused unsubscribe removed the operator")
	}

	out, err = chartpilot(t, "olm", "unsubscribe", b.Package, "-n", ns, "--delete-crds", "--force-remove-finalizers", "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), "add --yes") {
		t.Fatalf("unsubscribe --delete-crds without --yes: %v", err)
	}
	// Long enough for OLM to let the CSV go on a loaded machine; the stuck
	// custom resource waits as long before its finalizer is removed.
	out, err = chartpilot(t, "olm", "unsubscribe", b.Package, "-n", ns, "--delete-crds", "--force-remove-finalizers", "--timeout", "20s", "--yes")
	if err != nil {
		t.Fatalf("unsubscribe: %v\n%s", err, out)
	}
	t.Logf("unsubscribe:\n%s", out)
	for _, want := range []string{"note: removed the finalizers of Widget " + ns + "/w", "subscription/journey deleted", "clusterserviceversion/journey.v0.1.0 deleted", "installplan/", "catalogsource/journey-catalog deleted", "operatorgroup/journey deleted", "customresourcedefinition/" + b.CRDName() + " deleted", "clusterrole/" + b.EditorRole() + " deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("unsubscribe output lacks %q", want)
		}
	}
	gone := []client.Object{
		&v1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Package}},
		&v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.CSVName()}},
		&v1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Package + "-catalog"}},
		&operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Package}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: b.CRDName()}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: b.EditorRole()}},
	}
	// What OLM made for the CSV is gone when unsubscribe returns, not later.
	if left, err := olm.OwnedByCSV(ctx, c, b.CSVName(), ns); err != nil || len(left) > 0 {
		t.Errorf("still there when unsubscribe returned: %s (%v)", strings.Join(left, ", "), err)
	}
	for _, obj := range gone {
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("%T %s still there after unsubscribe", obj, obj.GetName())
		}
	}
	var ips v1alpha1.InstallPlanList
	if err := c.List(ctx, &ips, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(ips.Items) != 0 {
		t.Errorf("%d InstallPlans left", len(ips.Items))
	}
	if _, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns}); !errors.Is(err, olm.ErrNotSubscribed) {
		t.Errorf("second unsubscribe: %v, want ErrNotSubscribed", err)
	}
}

func actions(res *olm.SubscribeResult) string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Kind+" "+string(o.Action))
	}
	return strings.Join(out, ", ")
}

// Manual approval: Wait stops at the InstallPlan that waits for approval and
// status says how to approve it; once approved, the CSV installs.
func TestManualApproval(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "olm")
	b := olmtest.Bundle{Package: "manual", Version: "0.1.0", InstallModes: []string{"AllNamespaces"}}
	addr := olmtest.Serve(t, olmtest.Catalog(t, b))

	out, err := chartpilot(t, "olm", "subscribe", b.Package, "-n", ns, "--catalog-address", addr, "--approval", "Manual", "--wait", "--timeout", "90s")
	if err != nil {
		t.Fatalf("subscribe: %v\n%s", err, out)
	}
	for _, want := range []string{"install mode AllNamespaces (supported by the CSV (AllNamespaces))", "the InstallPlan waits for approval", `patch installplan install-`} {
		if !strings.Contains(out, want) {
			t.Errorf("subscribe output lacks %q:\n%s", want, out)
		}
	}
	o, err := olm.Observe(ctx, c, b.Package, ns)
	if err != nil {
		t.Fatal(err)
	}
	f := findingOf(olm.Diagnose(o), olm.CheckInstallPlan)
	if f.Severity != olm.Warn || !strings.Contains(f.Message, "RequiresApproval") || !strings.Contains(f.Fix, `{"spec":{"approved":true}}`) {
		t.Errorf("InstallPlan finding: %+v", f)
	}
	ip := o.InstallPlan.DeepCopy()
	ip.Spec.Approved = true
	if err := c.Update(ctx, ip); err != nil {
		t.Fatal(err)
	}
	if _, err := olm.Wait(ctx, c, b.Package, ns, olm.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	var og operatorsv1.OperatorGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Package}, &og); err != nil {
		t.Fatal(err)
	}
	if len(og.Spec.TargetNamespaces) != 0 {
		t.Errorf("AllNamespaces OperatorGroup targets %v", og.Spec.TargetNamespaces)
	}
	if _, err := olm.Unsubscribe(ctx, c, olm.UnsubscribeOptions{Package: b.Package, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
}

func findingOf(fs []olm.Finding, check string) olm.Finding {
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	return olm.Finding{}
}

// OperatorGroups that OLM would choke on are refused before anything is
// created.
func TestSubscribeRefusesOperatorGroups(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	tests := []struct {
		name string
		// groups are the target namespaces of each OperatorGroup created first
		groups  [][]string
		mode    v1alpha1.InstallModeType
		wantErr error
		wantMsg string
	}{
		{name: "two groups", groups: [][]string{nil, nil}, wantErr: olm.ErrTooManyOperatorGroups, wantMsg: "has OperatorGroups og0, og1"},
		{name: "group for another namespace", groups: [][]string{{"elsewhere"}}, mode: v1alpha1.InstallModeTypeOwnNamespace, wantErr: olm.ErrIncompatibleOperatorGroup, wantMsg: "OperatorGroup og0 in namespace NS targets [elsewhere], install mode OwnNamespace needs [NS]; choose --install-mode SingleNamespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := olmtest.Namespace(t, c, "olm")
			for i, targets := range tt.groups {
				og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("og%d", i)}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}}
				if err := c.Create(ctx, og); err != nil {
					t.Fatal(err)
				}
			}
			_, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: "refused", Namespace: ns, CatalogAddress: "127.0.0.1:1", InstallMode: tt.mode})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), strings.ReplaceAll(tt.wantMsg, "NS", ns)) {
				t.Fatalf("err = %v, want %v with %q", err, tt.wantErr, tt.wantMsg)
			}
			var subs v1alpha1.SubscriptionList
			if err := c.List(ctx, &subs, client.InNamespace(ns)); err != nil || len(subs.Items) != 0 {
				t.Errorf("Subscriptions after the refusal: %d, %v", len(subs.Items), err)
			}
		})
	}
}

// A Subscription made with kubectl under another name is updated, not doubled.
func TestSubscribeAdoptsExistingSubscription(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "olm")
	mine := &v1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hand-made"},
		Spec:       &v1alpha1.SubscriptionSpec{Package: "adopted", CatalogSource: "adopted-catalog", CatalogSourceNamespace: ns, Channel: "alpha"},
	}
	if err := c.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	res, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: "adopted", Namespace: ns, CatalogAddress: "127.0.0.1:1", Channel: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(res); got != "CatalogSource created, OperatorGroup created, Subscription configured" {
		t.Errorf("subscribe: %s", got)
	}
	var subs v1alpha1.SubscriptionList
	if err := c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(subs.Items) != 1 || subs.Items[0].Name != "hand-made" || subs.Items[0].Spec.Channel != "stable" {
		t.Errorf("Subscriptions after subscribe: %+v", subs.Items)
	}
}

// A wait that times out asks the catalog which packages it serves, so that
// its error says the package is not there rather than only that OLM's
// resolution failed.
func TestWaitTimeoutAsksTheCatalog(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	c := newClient(t)
	ns := olmtest.Namespace(t, c, "waitcat")
	addr := olmtest.Serve(t, olmtest.Catalog(t, olmtest.Bundle{Package: "present", Version: "0.1.0"}))
	if _, err := olm.Subscribe(ctx, c, olm.SubscribeOptions{Package: "absent", Namespace: ns, CatalogAddress: addr}); err != nil {
		t.Fatal(err)
	}
	// Only a READY CatalogSource is asked: wait until OLM reaches it.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		o, err := olm.Observe(ctx, c, "absent", ns)
		if err != nil || o.CatalogSource == nil {
			return false, err
		}
		s := o.CatalogSource.Status.GRPCConnectionState
		return s != nil && s.LastObservedState == "READY", nil
	})
	if err != nil {
		t.Fatalf("the CatalogSource never became READY: %v", err)
	}
	_, err = olm.Wait(ctx, c, "absent", ns, olm.WaitOptions{Timeout: 2 * time.Second, Catalog: env.Config})
	if err == nil || !strings.Contains(err.Error(), "serves no package absent (it serves present)") {
		t.Fatalf("wait error %v, want it to name what the catalog serves", err)
	}
}
