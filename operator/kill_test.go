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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
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
	// start of the action it aims at (see aimKill).
	maxDelay time.Duration
}

// TestKillTrials kills the operator (SIGKILL) while it installs, upgrades
// and uninstalls releases, starts it again, and checks after each restart
// that every release converged without loss: each CR Deployed at its
// generation with one revision deployed and none left pending (one a kill
// interrupted is marked failed), the history kept (every revision of a
// release once deployed recorded before the kill still there, but those
// Helm's MaxHistory drops), every object with the greeting of its CR and the
// UID it had (an upgrade never recreates what it keeps), none orphaned,
// duplicated or left after an uninstall. Each kill is aimed at an action:
// a random moment shortly after the start of one (a pending revision, or
// one uninstalling, seen through a watch), the phase aimed at the one hit
// least so far; each phase must be hit (a release left mid-action by the
// kill) in at least half the trials aimed at it. One suite kills during the
// actions of one release of 30 objects; the other during those of 50
// releases reconciled 4 at a time, after a random number of the actions
// aimed at started.
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
		// An action of 30 objects takes 50 ms or more here: a kill within
		// 50 ms of its start lands inside it.
		{"one release of 30 objects", killSuite{crs: 1, objects: 30, trials: 15, concurrency: 1, maxDelay: 50 * time.Millisecond}},
		{fmt.Sprintf("%d releases", crs), killSuite{crs: crs, objects: 3, trials: 8, concurrency: 4, maxDelay: 20 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.suite
			if env := os.Getenv(killTrialsEnv); env != "" {
				v, err := strconv.Atoi(env)
				if err != nil || v < 1 {
					t.Fatalf("%s=%q: want a number of trials, at least 1", killTrialsEnv, env)
				}
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
	aimed, hits := map[string]int{}, map[string]int{}
	for i := range s.trials {
		before := f.observe()
		phases := map[string]string{}
		for _, m := range f.members {
			phases[m.name] = m.phase(rng)
		}
		target := leastHit(phases, hits)
		starts := f.watchStarts()
		for _, m := range f.members {
			f.act(m, phases[m.name], i)
		}
		nth := 1 + rng.IntN(countPhase(phases, target))
		delay := time.Duration(rng.Int64N(int64(s.maxDelay)))
		seen := starts.wait(target, nth, phases)
		time.Sleep(delay)
		f.proc.kill()
		starts.stop()
		left := f.observe()
		p, w := left.pending(phases)
		pending, window = pending+p, window+w
		aimed[target]++
		hit := left.hits(phases)
		for phase := range hit {
			hits[phase]++
		}
		t.Logf("trial %d: %s; killed %s after the start of %d of the %ss (aimed at the %d-th; %v): releases left mid-action %v",
			i, countPhases(phases), delay.Round(time.Millisecond), seen, target, nth, seen >= nth, hit)

		f.proc = startOperatorProcess(t, f.po)
		f.check(phases, before, left)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d kills in %s: aimed at %v, hit %v; %d releases left pending, %d of them upgrades with none deployed; every one recovered without loss",
		s.trials, time.Since(began).Round(time.Second), aimed, hits, pending, window)
	for _, phase := range slices.Sorted(maps.Keys(aimed)) {
		if want := (aimed[phase] + 1) / 2; hits[phase] < want {
			t.Errorf("%d of %d kills aimed at an %s left one mid-action, want at least %d: the trials do not test what they mean to", hits[phase], aimed[phase], phase, want)
		}
	}
}

// leastHit is the phase of phases hit least so far (install, upgrade,
// uninstall on a tie): the next kill aims at it.
func leastHit(phases map[string]string, hits map[string]int) string {
	best := ""
	for _, p := range []string{"install", "upgrade", "uninstall"} {
		if countPhase(phases, p) > 0 && (best == "" || hits[p] < hits[best]) {
			best = p
		}
	}
	return best
}

func countPhase(phases map[string]string, phase string) int {
	n := 0
	for _, p := range phases {
		if p == phase {
			n++
		}
	}
	return n
}

// startStatus is the status of the revision an action of a phase writes
// first: an install's or upgrade's pending revision, the uninstalled
// release's last revision marked uninstalling.
var startStatus = map[string]string{"install": "pending-install", "upgrade": "pending-upgrade", "uninstall": "uninstalling"}

// actionStarts follows the release records of the fleet's namespace and
// counts the starts of actions by release.
type actionStarts struct {
	t      *testing.T
	events <-chan watch.Event
	stopFn func()
	seen   map[string]bool
}

// watchStarts starts following the release records, from now.
func (f *fleet) watchStarts() *actionStarts {
	t := f.env.t
	t.Helper()
	w, err := f.env.cs.CoreV1().Secrets(f.ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	return &actionStarts{t: t, events: w.ResultChan(), stopFn: w.Stop, seen: map[string]bool{}}
}

// wait returns once the nth release of phase has started its action, or
// after 30 s (a kill then lands wherever it lands: the hits say so), with
// the number of those seen started.
func (a *actionStarts) wait(phase string, nth int, phases map[string]string) int {
	count := func() int {
		n := 0
		for name := range a.seen {
			if phases[name] == phase {
				n++
			}
		}
		return n
	}
	timeout := time.After(30 * time.Second)
	for count() < nth {
		select {
		case ev, ok := <-a.events:
			if !ok {
				a.t.Logf("the watch of release records ended")
				return count()
			}
			s, isSecret := ev.Object.(*corev1.Secret)
			if isSecret && (ev.Type == watch.Added || ev.Type == watch.Modified) && s.Labels["status"] == startStatus[phases[s.Labels["name"]]] {
				a.seen[s.Labels["name"]] = true
			}
		case <-timeout:
			return count()
		}
	}
	return count()
}

func (a *actionStarts) stop() { a.stopFn() }

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

// hits lists the phases of the releases a kill left mid-action: the latest
// revision of one the phase's action writes first (see startStatus).
func (s fleetState) hits(phases map[string]string) map[string]int {
	out := map[string]int{}
	for name, revs := range s.revisions {
		if latest := s.latest(name); revs[latest] == startStatus[phases[name]] {
			out[phases[name]]++
		}
	}
	return out
}

// check waits for the fleet to converge after the restart and compares it
// with what it was before the trial (before) and right after the kill
// (left).
func (f *fleet) check(phases map[string]string, before, left fleetState) {
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
		f.checkRelease(m, phases[m.name], before, left, after)
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
func (f *fleet) checkRelease(m *member, phase string, before, left, after fleetState) {
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
	// The history of a release once deployed is kept: by the killed
	// operator's upgrade, and by the recovery. (That of an install never
	// deployed is not: a failed install is uninstalled.)
	if err := historyKept(before.revisions[m.name], left.revisions[m.name], release.MaxHistory); err != nil {
		t.Errorf("%s, from before the upgrade to the kill: %v", m.name, err)
	}
	if err := historyKept(left.revisions[m.name], after.revisions[m.name], release.MaxHistory); err != nil {
		t.Errorf("%s, from the kill to the recovery: %v", m.name, err)
	}
}

// historyKept checks that the revisions of a release in from (version to
// status) are all in to, but those Helm's pruning to maxHistory removed:
// each revision written drops the oldest until maxHistory-1 are left,
// sparing the one deployed then. So a revision is missing only when to
// holds exactly maxHistory, and every revision of from kept that is older
// than a missing one is the one deployed (at most one).
func historyKept(from, to map[int]string, maxHistory int) error {
	if len(to) > maxHistory {
		return fmt.Errorf("%d revisions kept, more than Helm's %d", len(to), maxHistory)
	}
	var missing []int
	for v := range from {
		if _, ok := to[v]; !ok {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	if len(to) != maxHistory {
		return fmt.Errorf("revisions %v lost: %d revisions kept, fewer than Helm's %d that would prune them", missing, len(to), maxHistory)
	}
	newest := missing[len(missing)-1]
	var spared []int
	for v, status := range from {
		if _, ok := to[v]; ok && v < newest {
			spared = append(spared, v)
			if status != "deployed" {
				return fmt.Errorf("revision %d lost while the older %d (%s, not deployed) was kept: not Helm's pruning of the oldest", newest, v, status)
			}
		}
	}
	if len(spared) > 1 {
		return fmt.Errorf("revision %d lost while older %v were kept: not Helm's pruning of the oldest", newest, spared)
	}
	return nil
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

// historyKept tells Helm's pruning to MaxHistory from a lost revision.
func TestHistoryKept(t *testing.T) {
	// revs builds a history: versions from..to with status, then extra.
	revs := func(from, to int, status string, extra map[int]string) map[int]string {
		out := map[int]string{}
		for v := from; v <= to; v++ {
			out[v] = status
		}
		maps.Copy(out, extra)
		return out
	}
	for _, tc := range []struct {
		name     string
		from, to map[int]string
		ok       bool
	}{
		{"all kept, one added", revs(1, 4, "superseded", map[int]string{5: "pending-upgrade"}), revs(1, 4, "superseded", map[int]string{5: "failed", 6: "deployed"}), true},
		{"the oldest pruned at the limit", revs(1, 9, "superseded", map[int]string{10: "deployed"}), revs(2, 10, "superseded", map[int]string{11: "deployed"}), true},
		{"two pruned at the limit", revs(1, 9, "superseded", map[int]string{10: "deployed"}), revs(3, 11, "superseded", map[int]string{12: "deployed"}), true},
		{"the deployed spared", revs(2, 10, "failed", map[int]string{1: "deployed"}), revs(3, 11, "failed", map[int]string{1: "deployed"}), true},
		{"a middle revision lost", revs(1, 5, "superseded", nil), revs(1, 6, "superseded", map[int]string{3: ""}), false},
		{"the oldest lost below the limit", revs(1, 5, "superseded", nil), revs(2, 6, "superseded", nil), false},
		{"more than the limit kept", revs(1, 10, "superseded", nil), revs(1, 11, "superseded", nil), false},
		{"an older one not deployed kept", revs(1, 10, "superseded", nil), revs(3, 11, "superseded", map[int]string{1: "superseded"}), false},
		{"two older ones kept", revs(3, 10, "superseded", map[int]string{1: "deployed", 2: "deployed"}), revs(4, 11, "superseded", map[int]string{1: "deployed", 2: "deployed"}), false},
		{"all lost", revs(1, 3, "superseded", nil), map[int]string{}, false},
	} {
		// A status "" marks a version absent.
		for v, s := range tc.to {
			if s == "" {
				delete(tc.to, v)
			}
		}
		err := historyKept(tc.from, tc.to, 10)
		if (err == nil) != tc.ok {
			t.Errorf("%s: historyKept = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
