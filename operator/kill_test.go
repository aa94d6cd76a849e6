package operator

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/operator/reconciler"
)

// Environment variables that choose the kill trials' number and seed, to
// run more of them or repeat a failed run.
const (
	killTrialsEnv = "CHARTPILOT_KILL_TRIALS"
	killSeedEnv   = "CHARTPILOT_KILL_SEED"
)

// TestKillTrials kills the operator (SIGKILL) at random moments of
// installs, upgrades and uninstalls of a release of 30 objects, starts it
// again, and checks after each restart that the release converged without
// loss: no revision left pending (one a kill interrupted is marked failed),
// one deployed, the history kept (never
// back to revision 1 once upgraded), every object with the UID it had (an
// upgrade never recreates what it keeps), and nothing left after an
// uninstall.
func TestKillTrials(t *testing.T) {
	trials, seed := 15, uint64(time.Now().UnixNano())
	if v, err := strconv.Atoi(os.Getenv(killTrialsEnv)); err == nil {
		trials = v
	}
	if v, err := strconv.ParseUint(os.Getenv(killSeedEnv), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d trials, seed %d (%s=%d repeats them)", trials, seed, killSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	k := &killTrial{env: newEnv(t), name: "k"}
	k.ns = k.env.namespace()
	k.env.createApp(k.ns, "canary", map[string]any{"count": 1}, nil)

	pending, window := 0, 0
	for i := range trials {
		k.proc = startOperatorProcess(t, processOptions{Chart: "testdata/charts/many"})
		k.waitLive(i)
		phase := k.phase()
		before := k.observe()
		// An action of 30 objects takes a few hundred milliseconds here.
		delay := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
		k.act(phase, i)
		time.Sleep(delay)
		k.proc.kill()
		left := k.releaseStatuses()
		if n := len(left); n > 0 && left[n-1] != "deployed" && left[n-1] != "superseded" && left[n-1] != "failed" {
			pending++
			if phase == "upgrade" && !slices.Contains(left, "deployed") {
				window++ // Helm superseded the old revision, the new one is not deployed yet
			}
		}
		t.Logf("trial %d: %s, killed after %s, left %v", i, phase, delay.Round(time.Millisecond), left)

		k.proc = startOperatorProcess(t, processOptions{Chart: "testdata/charts/many"})
		k.check(phase, before)
		k.proc.kill()
		if t.Failed() {
			return
		}
	}
	t.Logf("%d kills: %d left a revision pending, %d of them upgrades with none deployed; every one recovered without loss", trials, pending, window)
}

type killTrial struct {
	env  *env
	ns   string
	name string
	proc *operatorProcess
	// exists says whether the CR exists between trials.
	exists bool
	// upgrades since the install, to uninstall now and then.
	upgrades int
}

// releaseState is what a trial compares across a kill.
type releaseState struct {
	uids     map[string]types.UID
	revision int
}

func (k *killTrial) phase() string {
	switch {
	case !k.exists:
		return "install"
	case k.upgrades >= 3:
		return "uninstall"
	}
	return "upgrade"
}

func (k *killTrial) act(phase string, i int) {
	t, ctx, res := k.env.t, context.Background(), k.env.dyn.Resource(appGVR).Namespace(k.ns)
	t.Helper()
	switch phase {
	case "install":
		k.env.createApp(k.ns, k.name, map[string]any{"greeting": greeting(i)}, nil)
		k.exists, k.upgrades = true, 0
	case "upgrade":
		patch := fmt.Sprintf(`{"spec":{"greeting":%q}}`, greeting(i))
		if _, err := res.Patch(ctx, k.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		k.upgrades++
	case "uninstall":
		if err := res.Delete(ctx, k.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		k.exists = false
	}
}

func greeting(i int) string { return fmt.Sprintf("trial-%d", i) }

// waitLive waits until the freshly started operator reconciles: the canary
// CR's change shows in its ConfigMap.
func (k *killTrial) waitLive(i int) {
	k.env.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"greeting":"live-%d"}}`, i)
	if _, err := k.env.dyn.Resource(appGVR).Namespace(k.ns).Patch(context.Background(), "canary", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		k.env.t.Fatal(err)
	}
	k.waitGreeting("canary-0", fmt.Sprintf("live-%d", i))
}

func (k *killTrial) waitGreeting(configMap, want string) {
	k.env.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := k.env.cs.CoreV1().ConfigMaps(k.ns).Get(ctx, configMap, metav1.GetOptions{})
		return err == nil && cm.Data["greeting"] == want, nil
	})
	if err != nil {
		k.env.t.Fatalf("ConfigMap %s never showed %q", configMap, want)
	}
}

// observe reads the UIDs of the release's objects and its latest revision.
func (k *killTrial) observe() releaseState {
	t := k.env.t
	t.Helper()
	cms, err := k.env.cs.CoreV1().ConfigMaps(k.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + k.name})
	if err != nil {
		t.Fatal(err)
	}
	st := releaseState{uids: map[string]types.UID{}}
	for _, cm := range cms.Items {
		st.uids[cm.Name] = cm.UID
	}
	for v := range k.revisions() {
		st.revision = max(st.revision, v)
	}
	return st
}

// revisions maps each revision of the release in storage to its status.
func (k *killTrial) revisions() map[int]string {
	t := k.env.t
	t.Helper()
	secrets, err := k.env.cs.CoreV1().Secrets(k.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + k.name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, s := range secrets.Items {
		if v, err := strconv.Atoi(s.Labels["version"]); err == nil {
			out[v] = s.Labels["status"]
		}
	}
	return out
}

// releaseStatuses lists the statuses of the revisions, oldest first.
func (k *killTrial) releaseStatuses() []string {
	revs := k.revisions()
	var out []string
	for _, v := range slices.Sorted(maps.Keys(revs)) {
		out = append(out, revs[v])
	}
	return out
}

// check waits for the release to converge after the restart and compares
// it with what it was before the trial.
func (k *killTrial) check(phase string, before releaseState) {
	t := k.env.t
	t.Helper()
	if phase == "uninstall" {
		k.waitGone()
		if after := k.observe(); len(after.uids) > 0 || after.revision > 0 {
			t.Errorf("after the uninstall: %d objects and revision %d left", len(after.uids), after.revision)
		}
		return
	}
	k.waitConverged()
	after := k.observe()
	revs := k.revisions()
	deployed := 0
	for v, s := range revs {
		switch s {
		case "deployed":
			deployed++
		case "pending-install", "pending-upgrade", "pending-rollback", "uninstalling":
			t.Errorf("revision %d is %s after recovery", v, s)
		}
	}
	if deployed != 1 {
		t.Errorf("%d revisions deployed, want 1: %v", deployed, k.releaseStatuses())
	}
	if len(after.uids) != 30 {
		t.Errorf("%d objects, want 30", len(after.uids))
	}
	if phase == "upgrade" {
		for name, uid := range before.uids {
			if after.uids[name] != uid {
				t.Errorf("%s was recreated by recovery (UID %s, was %s)", name, after.uids[name], uid)
			}
		}
		if after.revision <= before.revision {
			t.Errorf("latest revision %d after an upgrade from %d: the history was lost", after.revision, before.revision)
		}
	}
}

// waitConverged waits until the CR's status reports its current generation
// deployed and not failing, and the objects show its greeting.
func (k *killTrial) waitConverged() {
	t := k.env.t
	t.Helper()
	var u *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if u, err = k.env.dyn.Resource(appGVR).Namespace(k.ns).Get(ctx, k.name, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		deployed, failed := condition(u, reconciler.TypeDeployed), condition(u, reconciler.TypeReleaseFailed)
		return gen == u.GetGeneration() && deployed != nil && deployed.Status == metav1.ConditionTrue &&
			failed != nil && failed.Status == metav1.ConditionFalse, nil
	})
	if err != nil {
		t.Fatalf("the release never converged after the restart: status %v", u.Object["status"])
	}
	want, _, _ := unstructured.NestedString(u.Object, "spec", "greeting")
	k.waitGreeting(k.name+"-29", want)
}

func (k *killTrial) waitGone() {
	t := k.env.t
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := k.env.dyn.Resource(appGVR).Namespace(k.ns).Get(ctx, k.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the CR was never finalized after the restart")
	}
}
