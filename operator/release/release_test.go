package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/watches"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The package's tests share one real API server.
var (
	restConfig *rest.Config
	appChart   *chart.Chart
)

func TestMain(m *testing.M) {
	var err error
	if appChart, err = loader.Load("testdata/charts/app"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(clustertest.MainAPIServer(m, nil, &restConfig))
}

// fixture is one test's namespace and clients.
type fixture struct {
	t      *testing.T
	ns     string
	client *Client
	cs     kubernetes.Interface
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clustertest.SkipIfShort(t)
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("t%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	c, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ns: ns, client: c, cs: cs}
}

// request for the app chart with values.
func (f *fixture) request(vals map[string]any) *Request {
	return &Request{Name: "app", Namespace: f.ns, Chart: appChart, Values: vals, RollbackForce: true, Timeout: time.Minute}
}

func (f *fixture) reconcile(req *Request) (Result, error) {
	f.t.Helper()
	return f.client.Reconcile(context.Background(), req)
}

func (f *fixture) mustReconcile(req *Request, wantActions ...string) Result {
	f.t.Helper()
	res, err := f.reconcile(req)
	if err != nil {
		f.t.Fatalf("Reconcile: %v (actions %v)", err, actionNames(res))
	}
	if got := actionNames(res); !slices.Equal(got, wantActions) {
		f.t.Fatalf("actions %v, want %v", got, wantActions)
	}
	if res.State.Status != InSync {
		f.t.Fatalf("state %s (%s), want InSync", res.State.Status, res.State.Reason)
	}
	return res
}

func (f *fixture) greeting() string {
	f.t.Helper()
	cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("reading the release's ConfigMap: %v", err)
	}
	return cm.Data["greeting"]
}

// crashAfterSupersede leaves the release as a kill in the middle of an
// upgrade or rollback does (as the issue reproduced it by hand): the
// deployed revision superseded, and a copy of it as the next revision with
// the pending status. It returns that revision.
func (f *fixture) crashAfterSupersede(pending releasecommon.Status) *helmrelease.Release {
	f.t.Helper()
	store := f.client.actionConfig(f.ns).Releases
	deployed := mustV1(f.t)(store.Deployed("app"))
	next := *deployed
	info := *deployed.Info
	next.Info, next.Version = &info, deployed.Version+1
	next.Info.Status = pending
	deployed.Info.Status = releasecommon.StatusSuperseded
	if err := store.Update(deployed); err != nil {
		f.t.Fatal(err)
	}
	if err := store.Create(&next); err != nil {
		f.t.Fatal(err)
	}
	return &next
}

func (f *fixture) configMapUID() string {
	f.t.Helper()
	cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("reading the release's ConfigMap: %v", err)
	}
	return string(cm.UID)
}

func actionNames(res Result) []string {
	var out []string
	for _, a := range res.Actions {
		out = append(out, a.Action)
	}
	return out
}

func TestInstallThenNoOp(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	req := f.request(map[string]any{"greeting": "hi"})
	res := f.mustReconcile(req, ActionInstall)
	if f.greeting() != "hi" {
		t.Errorf("greeting %q", f.greeting())
	}
	if got := res.State.Deployed.Labels[DigestLabel]; got != req.Digest() {
		t.Errorf("digest label %q, want %q", got, req.Digest())
	}
	// Nothing changed: no Helm action at all.
	f.mustReconcile(f.request(map[string]any{"greeting": "hi"}))
}

func TestUpgradeOnlyWhenValuesOrChartChange(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "hi"}), ActionInstall)
	res := f.mustReconcile(f.request(map[string]any{"greeting": "bonjour"}), ActionUpgrade)
	if f.greeting() != "bonjour" || res.State.Deployed.Version != 2 {
		t.Errorf("greeting %q at revision %d", f.greeting(), res.State.Deployed.Version)
	}
	// A changed chart (same values) upgrades too.
	changed := *appChart
	changed.Metadata = &chart.Metadata{APIVersion: "v2", Name: "app", Version: "0.2.0"}
	req := f.request(map[string]any{"greeting": "bonjour"})
	req.Chart = &changed
	f.mustReconcile(req, ActionUpgrade)
	f.mustReconcile(req)
}

func TestDriftRepair(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		// drift changes the cluster behind Helm's back.
		drift func(t *testing.T, f *fixture)
		// want is part of the drift report.
		want string
	}{
		{
			name: "deleted object is recreated",
			drift: func(t *testing.T, f *fixture) {
				if err := f.cs.CoreV1().ConfigMaps(f.ns).Delete(context.Background(), "app-config", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "ConfigMap " + "%s/app-config: deleted",
		},
		{
			name: "edited field is restored",
			drift: func(t *testing.T, f *fixture) {
				cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "app-config", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cm.Data["greeting"] = "tampered"
				if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "ConfigMap %s/app-config: .data.greeting changed",
		},
		{
			name: "edited service port is restored",
			drift: func(t *testing.T, f *fixture) {
				svc, err := f.cs.CoreV1().Services(f.ns).Get(context.Background(), "app", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				svc.Spec.Ports[0].Port = 81
				if _, err := f.cs.CoreV1().Services(f.ns).Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "Service %s/app: .spec.ports[0].port changed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := f.request(map[string]any{"greeting": "hi"})
			f.mustReconcile(req, ActionInstall)
			tt.drift(t, f)
			st, err := f.client.Observe(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(tt.want, f.ns)
			var drift []string
			for _, d := range st.Drift {
				drift = append(drift, d.String())
			}
			if st.Status != Drifted || !slices.Contains(drift, want) {
				t.Fatalf("observed %s %v, want Drifted with %q", st.Status, drift, want)
			}
			f.mustReconcile(req, ActionRepair)
			if f.greeting() != "hi" {
				t.Errorf("greeting %q after repair", f.greeting())
			}
			f.mustReconcile(req)
		})
	}
}

// Objects the server defaults or normalises are not drift: a Deployment with
// cpu "0.5" (stored as 500m) stays in sync.
func TestNoFalseDrift(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	req := f.request(map[string]any{"withDeployment": true})
	res := f.mustReconcile(req, ActionInstall)
	// No controller runs on a bare API server: the Deployment never becomes ready.
	if len(res.State.NotReady) == 0 || !strings.Contains(res.State.NotReady[0], "Deployment") {
		t.Errorf("NotReady = %v, want the Deployment", res.State.NotReady)
	}
	f.mustReconcile(req)
}

func TestFailedUpgradeRollsBack(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "good"}), ActionInstall)

	bad := f.request(map[string]any{"greeting": "bad", "broken": true})
	bad.DryRun = watches.DryRunNone // let Helm start the upgrade so that it fails half way
	res, err := f.reconcile(bad)
	if !errors.Is(err, ErrUpgradeFailed) {
		t.Fatalf("err = %v, want ErrUpgradeFailed", err)
	}
	if got := actionNames(res); !slices.Equal(got, []string{ActionUpgrade, ActionRollback}) {
		t.Errorf("actions %v, want upgrade then rollback", got)
	}
	if f.greeting() != "good" {
		t.Errorf("greeting %q after rollback, want the last good one", f.greeting())
	}
	// The next attempt (the caller's backoff) tries the upgrade again.
	if _, err := f.reconcile(bad); !errors.Is(err, ErrUpgradeFailed) {
		t.Fatalf("retry: err = %v", err)
	}
	// Fixing the CR converges.
	f.mustReconcile(f.request(map[string]any{"greeting": "fixed"}), ActionUpgrade)
	if f.greeting() != "fixed" {
		t.Errorf("greeting %q", f.greeting())
	}
}

// A template error fails an upgrade or an install before anything is written,
// whatever the dry run option: no remediation runs and no revision is added.
func TestRenderErrorsChangeNothing(t *testing.T) {
	clustertest.SkipIfShort(t)
	broken := *appChart
	broken.Templates = append(slices.Clone(appChart.Templates), &helmcommon.File{Name: "templates/bad.yaml", Data: []byte(`{{ required "values.mandatory is required" .Values.mandatory }}`)})
	for _, dryRun := range []watches.DryRun{watches.DryRunClient, watches.DryRunNone, watches.DryRunServer} {
		t.Run("upgrade, dry run "+string(dryRun), func(t *testing.T) {
			f := newFixture(t)
			f.mustReconcile(f.request(map[string]any{"greeting": "good"}), ActionInstall)
			req := f.request(map[string]any{"greeting": "good"})
			req.Chart, req.DryRun = &broken, dryRun
			res, err := f.reconcile(req)
			if !errors.Is(err, ErrUpgradeFailed) || !errors.Is(err, ErrNothingChanged) || !strings.Contains(err.Error(), "values.mandatory is required") {
				t.Fatalf("err = %v, want an upgrade that changed nothing", err)
			}
			if got := actionNames(res); !slices.Equal(got, []string{ActionUpgrade}) {
				t.Errorf("actions %v, want only the upgrade (no rollback)", got)
			}
			st, _ := f.client.Observe(context.Background(), f.request(map[string]any{"greeting": "good"}))
			if st.Latest.Version != 1 {
				t.Errorf("latest revision %d: the failed upgrade touched the release", st.Latest.Version)
			}
		})
		t.Run("install, dry run "+string(dryRun), func(t *testing.T) {
			f := newFixture(t)
			req := f.request(map[string]any{"greeting": "good"})
			req.Chart, req.DryRun = &broken, dryRun
			res, err := f.reconcile(req)
			if !errors.Is(err, ErrInstallFailed) || !errors.Is(err, ErrNothingChanged) {
				t.Fatalf("err = %v, want an install that changed nothing", err)
			}
			if got := actionNames(res); !slices.Equal(got, []string{ActionInstall}) {
				t.Errorf("actions %v, want only the install (no uninstall)", got)
			}
		})
	}
}

func TestFailedInstallIsUninstalled(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	req := f.request(map[string]any{"broken": true})
	req.DryRun = watches.DryRunNone
	res, err := f.reconcile(req)
	if !errors.Is(err, ErrInstallFailed) {
		t.Fatalf("err = %v, want ErrInstallFailed", err)
	}
	if got := actionNames(res); !slices.Equal(got, []string{ActionInstall, ActionUninstall}) {
		t.Errorf("actions %v", got)
	}
	st, err := f.client.Observe(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != Absent {
		t.Errorf("after a failed install: %s, want Absent", st.Status)
	}
	if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "app-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("objects of the failed install left behind: %v", err)
	}
	f.mustReconcile(f.request(nil), ActionInstall)
}

// A revision left pending by a crash is unlocked and the release converges.
func TestUnlockPendingRelease(t *testing.T) {
	clustertest.SkipIfShort(t)
	for _, pending := range []releasecommon.Status{releasecommon.StatusPendingInstall, releasecommon.StatusPendingUpgrade, releasecommon.StatusPendingRollback} {
		t.Run(string(pending), func(t *testing.T) {
			f := newFixture(t)
			req := f.request(map[string]any{"greeting": "hi"})
			f.mustReconcile(req, ActionInstall)
			store := f.client.actionConfig(f.ns).Releases
			rel := mustV1(t)(store.Last("app"))
			if pending == releasecommon.StatusPendingInstall {
				rel.Info.Status = pending
				if err := store.Update(rel); err != nil {
					t.Fatal(err)
				}
			} else {
				// An upgrade or rollback that a crash interrupted: a newer pending revision.
				next := *rel
				info := *rel.Info
				next.Info, next.Version = &info, rel.Version+1
				next.Info.Status = pending
				if err := store.Create(&next); err != nil {
					t.Fatal(err)
				}
			}
			st, err := f.client.Observe(context.Background(), req)
			if err != nil || st.Status != Locked {
				t.Fatalf("observed %s, %v; want Locked", st.Status, err)
			}
			res, err := f.reconcile(req)
			if err != nil {
				t.Fatalf("Reconcile: %v (%v)", err, actionNames(res))
			}
			if got := actionNames(res); got[0] != ActionUnlock || res.State.Status != InSync {
				t.Errorf("actions %v, state %s", got, res.State.Status)
			}
			if f.greeting() != "hi" {
				t.Errorf("greeting %q", f.greeting())
			}
		})
	}
}

// A crash after Helm superseded the deployed revision and before it deployed
// the new one leaves no deployed revision: recovery must upgrade or roll back
// the live release, never uninstall it (its objects keep their UIDs, its
// history its revisions).
func TestCrashAfterSupersede(t *testing.T) {
	for _, pending := range []releasecommon.Status{releasecommon.StatusPendingUpgrade, releasecommon.StatusPendingRollback} {
		t.Run(string(pending), func(t *testing.T) {
			f := newFixture(t)
			f.mustReconcile(f.request(map[string]any{"greeting": "one"}), ActionInstall)
			req := f.request(map[string]any{"greeting": "two"})
			f.mustReconcile(req, ActionUpgrade)
			uid := f.configMapUID()

			next := f.crashAfterSupersede(pending)

			res, err := f.reconcile(req)
			if err != nil {
				t.Fatalf("Reconcile: %v (%v)", err, actionNames(res))
			}
			if got := actionNames(res); !slices.Equal(got, []string{ActionUnlock, ActionUpgrade}) {
				t.Errorf("actions %v, want unlock then upgrade", got)
			}
			if got := f.configMapUID(); got != uid {
				t.Errorf("ConfigMap UID %s, was %s: the release was recreated", got, uid)
			}
			if got := res.State.Deployed.Version; got != next.Version+1 {
				t.Errorf("deployed revision %d, want %d (the history kept)", got, next.Version+1)
			}
			if f.greeting() != "two" {
				t.Errorf("greeting %q", f.greeting())
			}
		})
	}
}

// When the upgrade after such a crash fails too, the release is rolled back
// to the superseded revision, not uninstalled.
func TestCrashAfterSupersedeThenFailedUpgrade(t *testing.T) {
	f := newFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "good"}), ActionInstall)
	uid := f.configMapUID()
	f.crashAfterSupersede(releasecommon.StatusPendingUpgrade)

	bad := f.request(map[string]any{"greeting": "bad", "broken": true})
	bad.DryRun = watches.DryRunNone
	res, err := f.reconcile(bad)
	if !errors.Is(err, ErrUpgradeFailed) {
		t.Fatalf("err = %v (%v), want ErrUpgradeFailed", err, actionNames(res))
	}
	if got := actionNames(res); !slices.Equal(got, []string{ActionUnlock, ActionUpgrade, ActionRollback}) {
		t.Errorf("actions %v, want unlock, upgrade, rollback", got)
	}
	if got := f.configMapUID(); got != uid {
		t.Errorf("ConfigMap UID %s, was %s: the release was recreated", got, uid)
	}
	if f.greeting() != "good" {
		t.Errorf("greeting %q after rollback, want the superseded revision's", f.greeting())
	}
	// The result says what is deployed now: the rollback's revision.
	if res.State.Deployed == nil || res.State.Deployed.Version != 4 {
		t.Errorf("result's deployed revision %v, want 4 (install, pending, failed upgrade, rollback)", version(res.State.Deployed))
	}
}

func TestUninstall(t *testing.T) {
	clustertest.SkipIfShort(t)
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			f := newFixture(t)
			req := f.request(nil)
			f.mustReconcile(req, ActionInstall)
			req.UninstallWait = wait
			// A finalizer holds the ConfigMap for a while: an uninstall that
			// waits (Helm 4's kstatus watcher) returns once it is gone, one
			// that does not returns while it is still there.
			ctx := context.Background()
			cms := f.cs.CoreV1().ConfigMaps(f.ns)
			const hold = 2 * time.Second
			setFinalizers := func(fin ...string) {
				t.Helper()
				patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, mustJSON(t, fin))
				if _, err := cms.Patch(ctx, "app-config", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
			setFinalizers("chartpilot.test/hold")
			released := make(chan struct{})
			go func() {
				defer close(released)
				time.Sleep(hold)
				setFinalizers()
			}()
			began := time.Now()
			if err := f.client.Uninstall(ctx, req); err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			_, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
			switch {
			case wait && (took < hold || !apierrors.IsNotFound(err)):
				t.Errorf("the waiting uninstall returned after %s, ConfigMap: %v; want after %s with it gone", took, err, hold)
			case !wait && (took >= hold || err != nil):
				t.Errorf("the uninstall returned after %s, ConfigMap: %v; want before %s with it still terminating", took, err, hold)
			}
			<-released
			if err := kwait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Errorf("ConfigMap still there")
			}
			st, err := f.client.Observe(context.Background(), req)
			if err != nil || st.Status != Absent {
				t.Errorf("after uninstall: %s, %v", st.Status, err)
			}
			// Uninstalling what is not there is not an error.
			if err := f.client.Uninstall(context.Background(), req); err != nil {
				t.Errorf("second uninstall: %v", err)
			}
		})
	}
}

// A release installed by another tool (no digest label) is adopted with one upgrade.
func TestAdoptsReleaseWithoutDigest(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	req := f.request(nil)
	f.mustReconcile(req, ActionInstall)
	store := f.client.actionConfig(f.ns).Releases
	rel := mustV1(t)(store.Last("app"))
	delete(rel.Labels, DigestLabel)
	if err := store.Update(rel); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(req, ActionUpgrade)
	f.mustReconcile(req)
}

// A forced rollback (operator-sdk's default) of a release whose claim was
// bound since fails to replace the claim (volumeName is set and immutable):
// the rollback is done again as a patch, and the claim and its data stay.
func TestForcedRollbackKeepsABoundClaim(t *testing.T) {
	f := newFixture(t)
	var logged []string
	f.client.log = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	f.mustReconcile(f.request(map[string]any{"greeting": "one", "withClaim": true}), ActionInstall)
	claims := f.cs.CoreV1().PersistentVolumeClaims(f.ns)
	pvc, err := claims.Get(context.Background(), "app-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Spec.VolumeName = "bound-volume" // what the binder does
	if pvc, err = claims.Update(context.Background(), pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	req := f.request(map[string]any{"greeting": "two", "withClaim": true})
	f.mustReconcile(req, ActionUpgrade)

	if err := f.client.rollbackTo(req, 1); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if f.greeting() != "one" {
		t.Errorf("greeting %q after the rollback, want one", f.greeting())
	}
	after, err := claims.Get(context.Background(), "app-data", metav1.GetOptions{})
	if err != nil || after.UID != pvc.UID || after.Spec.VolumeName != "bound-volume" {
		t.Errorf("the claim changed: %v, %+v", err, after)
	}
	if !slices.ContainsFunc(logged, func(s string) bool { return strings.Contains(s, "retrying without force") }) {
		t.Errorf("the forced rollback did not fail as it does on a cluster: the test proves nothing (log %q)", logged)
	}
}

// One parsed chart serves every release of a watch: a release whose values
// disable a subchart leaves it in the chart for the next (Helm removes
// disabled subcharts from the chart it is given), and in either order.
func TestChartSharedAcrossReleases(t *testing.T) {
	f := newFixture(t)
	shared, err := loader.Load("testdata/charts/parent")
	if err != nil {
		t.Fatal(err)
	}
	install := func(name string, sub bool) {
		t.Helper()
		req := &Request{Name: name, Namespace: f.ns, Chart: shared, Values: map[string]any{"sub": map[string]any{"enabled": sub}}, Timeout: time.Minute}
		f.mustReconcile(req, ActionInstall)
		_, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), name+"-sub", metav1.GetOptions{})
		if got := err == nil; got != sub {
			t.Errorf("release %s, subchart enabled %v: its ConfigMap exists %v (%v)", name, sub, got, err)
		}
	}
	install("without", false)
	install("with", true)
	if len(shared.Dependencies()) != 1 || len(shared.Metadata.Dependencies) != 1 {
		t.Errorf("the shared chart has %d subcharts (%d in its metadata) after the installs, want 1", len(shared.Dependencies()), len(shared.Metadata.Dependencies))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
