package operator

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
)

// Environment variables that choose the kill trials' number (of each
// suite), seed and the number of releases of the fleet suite, to run more of
// them or repeat a failed run.
const (
	killTrialsEnv = "CHARTPILOT_KILL_TRIALS"
	killSeedEnv   = "CHARTPILOT_KILL_SEED"
	killCRsEnv    = "CHARTPILOT_KILL_CRS"
)

// killSuite is one shape of the kill trials.
type killSuite struct {
	// crs is the number of releases, objects the ConfigMaps of each.
	crs, objects int
	trials       int
	// concurrency is the operator's MaxConcurrentReconciles.
	concurrency int
	// maxDelay bounds the random wait before a kill, counted from the
	// moment a random number of the CRs acted on have converged.
	maxDelay time.Duration
}

// TestKillTrials kills the operator (SIGKILL) at random moments while it
// installs, upgrades and uninstalls releases, starts it again, and checks
// after each restart that every release converged without loss: each CR
// Deployed at its generation with one revision deployed and none left
// pending (one a kill interrupted is marked failed), the history kept (the
// latest revision past the one before an upgrade), every object with the
// greeting of its CR and the UID it had (an upgrade never recreates what it
// keeps), none orphaned, duplicated or left after an uninstall. One suite
// kills during the actions of one release of 30 objects; the other during
// those of 50 releases reconciled 4 at a time, a random number of them done
// by the kill.
func TestKillTrials(t *testing.T) {
	clustertest.SkipIfShort(t)
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv(killSeedEnv), 10, 64); err == nil {
		seed = v
	}
	crs := 50
	if v, err := strconv.Atoi(os.Getenv(killCRsEnv)); err == nil {
		crs = v
	}
	tests := []struct {
		name  string
		suite killSuite
	}{
		// An action of 30 objects takes a few hundred milliseconds here.
		{"one release of 30 objects", killSuite{crs: 1, objects: 30, trials: 15, concurrency: 1, maxDelay: 400 * time.Millisecond}},
		{fmt.Sprintf("%d releases", crs), killSuite{crs: crs, objects: 3, trials: 8, concurrency: 4, maxDelay: 200 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.suite
			if v, err := strconv.Atoi(os.Getenv(killTrialsEnv)); err == nil {
				s.trials = v
			}
			t.Logf("%d trials, seed %d (%s=%d repeats them)", s.trials, seed, killSeedEnv, seed)
			runKillTrials(t, s, rand.New(rand.NewPCG(seed, 0)))
		})
	}
}

func runKillTrials(t *testing.T, s killSuite, rng *rand.Rand) {
	began := time.Now()
	f := &fleet{env: newEnv(t), suite: s, po: processOptions{Chart: "testdata/charts/many", MaxConcurrentReconciles: s.concurrency}}
	f.ns = f.env.namespace()
	for i := range s.crs {
		f.members = append(f.members, &member{name: fmt.Sprintf("k%d", i)})
	}
	f.proc = startOperatorProcess(t, f.po)
	f.waitLive()
	pending, window := 0, 0
	for i := range s.trials {
		before := f.observe()
		phases := map[string]string{}
		for _, m := range f.members {
			phases[m.name] = m.phase(rng)
			f.act(m, phases[m.name], i)
		}
		done := rng.IntN(s.crs)
		f.waitDone(phases, done)
		delay := time.Duration(rng.Int64N(int64(s.maxDelay)))
		time.Sleep(delay)
		f.proc.kill()
		left := f.observe()
		p, w := left.pending(phases)
		pending, window = pending+p, window+w
		t.Logf("trial %d: %s; killed %s after %d converged, %d releases left pending", i, countPhases(phases), delay.Round(time.Millisecond), done, p)

		f.proc = startOperatorProcess(t, f.po)
		f.check(phases, before)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d kills in %s: %d releases left pending, %d of them upgrades with none deployed; every one recovered without loss",
		s.trials, time.Since(began).Round(time.Second), pending, window)
}

// fleet is the releases of a kill suite, in a namespace of their own, and the
// operator process of the moment.
type fleet struct {
	env     *env
	ns      string
	suite   killSuite
	members []*member
	po      processOptions
	proc    *operatorProcess
}

// member is one CR of the fleet.
type member struct {
	name string
	// exists says whether the CR exists between trials.
	exists bool
	// upgrades since the install, to uninstall now and then.
	upgrades int
	greeting string
}

// phase picks the member's next action: installed when absent, upgraded,
// and uninstalled after three upgrades or, once upgraded, now and then.
func (m *member) phase(rng *rand.Rand) string {
	switch {
	case !m.exists:
		return "install"
	case m.upgrades >= 3, m.upgrades > 0 && rng.IntN(5) == 0:
		return "uninstall"
	}
	return "upgrade"
}

func countPhases(phases map[string]string) string {
	n := map[string]int{}
	for _, p := range phases {
		n[p]++
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%d %ss", n[p], p))
	}
	return strings.Join(out, ", ")
}

func (f *fleet) act(m *member, phase string, i int) {
	t, ctx, res := f.env.t, context.Background(), f.env.dyn.Resource(appGVR).Namespace(f.ns)
	t.Helper()
	m.greeting = fmt.Sprintf("trial-%d", i)
	switch phase {
	case "install":
		f.env.createApp(f.ns, m.name, map[string]any{"greeting": m.greeting, "count": f.suite.objects}, nil)
		m.exists, m.upgrades = true, 0
	case "upgrade":
		patch := fmt.Sprintf(`{"spec":{"greeting":%q}}`, m.greeting)
		if _, err := res.Patch(ctx, m.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		m.upgrades++
	case "uninstall":
		if err := res.Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		m.exists = false
	}
}

// waitLive waits until the first operator process reconciles: a canary CR
// of a namespace of its own shows in its ConfigMap.
func (f *fleet) waitLive() {
	ns := f.env.namespace()
	f.env.createApp(ns, "canary", map[string]any{"count": 1, "greeting": "live"}, nil)
	f.env.waitConfigMap(ns, "canary-0", "live")
}

// crs lists the fleet's CRs by name.
func (f *fleet) crs(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
	list, err := f.env.dyn.Resource(appGVR).Namespace(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = &list.Items[i]
	}
	return out, nil
}

// converged says whether a CR is reconciled at its generation: deployed,
// not failing. A nil CR (deleted) has converged when its member is gone.
func converged(u *unstructured.Unstructured, exists bool) bool {
	if u == nil || !exists {
		return u == nil && !exists
	}
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	deployed, failed := condition(u, reconciler.TypeDeployed), condition(u, reconciler.TypeReleaseFailed)
	return gen == u.GetGeneration() && deployed != nil && deployed.Status == metav1.ConditionTrue &&
		failed != nil && failed.Status == metav1.ConditionFalse
}

// waitDone waits until at least n of the CRs acted on have converged.
func (f *fleet) waitDone(phases map[string]string, n int) {
	f.env.t.Helper()
	if n == 0 {
		return
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		crs, err := f.crs(ctx)
		if err != nil {
			return false, nil
		}
		done := 0
		for _, m := range f.members {
			if converged(crs[m.name], m.exists) {
				done++
			}
		}
		return done >= n, nil
	})
	if err != nil {
		f.env.t.Fatalf("fewer than %d CRs converged before the kill", n)
	}
}

// fleetState is what the API server stores of the fleet's releases, by
// release name: the status of each revision, and each object.
type fleetState struct {
	revisions map[string]map[int]string
	objects   map[string]map[string]object
}

type object struct {
	uid      types.UID
	greeting string
}

// observe reads the release records and objects of the fleet's namespace.
func (f *fleet) observe() fleetState {
	t, ctx := f.env.t, context.Background()
	t.Helper()
	st := fleetState{revisions: map[string]map[int]string{}, objects: map[string]map[string]object{}}
	secrets, err := f.env.cs.CoreV1().Secrets(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			t.Fatalf("release record %s: version %q", s.Name, s.Labels["version"])
		}
		name := s.Labels["name"]
		if st.revisions[name] == nil {
			st.revisions[name] = map[int]string{}
		}
		st.revisions[name][v] = s.Labels["status"]
	}
	cms, err := f.env.cs.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		name := cm.Labels["app"]
		if st.objects[name] == nil {
			st.objects[name] = map[string]object{}
		}
		st.objects[name][cm.Name] = object{uid: cm.UID, greeting: cm.Data["greeting"]}
	}
	return st
}

// latest is the release's latest revision, 0 for none.
func (s fleetState) latest(name string) int {
	return slices.Max(append(slices.Collect(maps.Keys(s.revisions[name])), 0))
}

// statuses lists the statuses of a release's revisions, oldest first.
func (s fleetState) statuses(name string) []string {
	revs := s.revisions[name]
	var out []string
	for _, v := range slices.Sorted(maps.Keys(revs)) {
		out = append(out, revs[v])
	}
	return out
}

// pending counts the releases a kill left with their latest revision in
// progress, and of those the upgrades with no revision deployed (Helm
// superseded the old revision, the new one is not deployed yet).
func (s fleetState) pending(phases map[string]string) (pending, window int) {
	for name := range s.revisions {
		left := s.statuses(name)
		if last := left[len(left)-1]; last == "deployed" || last == "superseded" || last == "failed" {
			continue
		}
		pending++
		if phases[name] == "upgrade" && !slices.Contains(left, "deployed") {
			window++
		}
	}
	return pending, window
}

// check waits for the fleet to converge after the restart and compares it
// with what it was before the trial.
func (f *fleet) check(phases map[string]string, before fleetState) {
	t := f.env.t
	t.Helper()
	f.waitConverged()
	after := f.observe()
	names := map[string]bool{}
	for _, m := range f.members {
		names[m.name] = true
		if !m.exists {
			if len(after.objects[m.name]) > 0 || len(after.revisions[m.name]) > 0 {
				t.Errorf("%s after its uninstall: %d objects and revisions %v left", m.name, len(after.objects[m.name]), after.statuses(m.name))
			}
			continue
		}
		f.checkRelease(m, phases[m.name], before, after)
	}
	for name := range after.objects {
		if !names[name] {
			t.Errorf("objects of %s, which is no release of the fleet: orphaned", name)
		}
	}
	for name := range after.revisions {
		if !names[name] {
			t.Errorf("release records of %s, which is no release of the fleet: orphaned", name)
		}
	}
}

// checkRelease checks one release that exists after the restart.
func (f *fleet) checkRelease(m *member, phase string, before, after fleetState) {
	t := f.env.t
	t.Helper()
	deployed := 0
	for v, s := range after.revisions[m.name] {
		switch s {
		case "deployed":
			deployed++
		case "pending-install", "pending-upgrade", "pending-rollback", "uninstalling":
			t.Errorf("%s: revision %d is %s after recovery", m.name, v, s)
		}
	}
	if deployed != 1 {
		t.Errorf("%s: %d revisions deployed, want 1: %v", m.name, deployed, after.statuses(m.name))
	}
	objs := after.objects[m.name]
	if len(objs) != f.suite.objects {
		t.Errorf("%s: %d objects, want %d", m.name, len(objs), f.suite.objects)
	}
	for name, o := range objs {
		if o.greeting != m.greeting {
			t.Errorf("%s: %s has greeting %q, want %q", m.name, name, o.greeting, m.greeting)
		}
	}
	if phase != "upgrade" {
		return
	}
	for name, o := range before.objects[m.name] {
		if objs[name].uid != o.uid {
			t.Errorf("%s: %s was recreated by recovery (UID %s, was %s)", m.name, name, objs[name].uid, o.uid)
		}
	}
	if after.latest(m.name) <= before.latest(m.name) {
		t.Errorf("%s: latest revision %d after an upgrade from %d: the history was lost", m.name, after.latest(m.name), before.latest(m.name))
	}
}

// waitConverged waits until every CR converged: reconciled at its
// generation, or finalized and gone.
func (f *fleet) waitConverged() {
	t := f.env.t
	t.Helper()
	var pending []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		crs, err := f.crs(ctx)
		if err != nil {
			return false, nil
		}
		pending = pending[:0]
		for _, m := range f.members {
			if !converged(crs[m.name], m.exists) {
				pending = append(pending, m.name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		t.Fatalf("after the restart, %d CRs never converged: %v", len(pending), pending)
	}
}
