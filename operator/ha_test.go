package operator

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// haKillsEnv sets how many leaders TestLeaderTakeover kills, haCRsEnv how
// many other CRs the replicas hold (a new leader reconciles them all).
const (
	haKillsEnv = "CHARTPILOT_HA_KILLS"
	haCRsEnv   = "CHARTPILOT_HA_CRS"
)

// TestLeaderTakeover runs the operator as two replicas electing a leader,
// each a process of its own with the default Lease timing. The standby
// reconciles nothing and writes nothing, at a small cost (its requests per
// minute and memory are logged). Killed with SIGKILL, the leader cannot
// release its Lease: the standby takes over and reconciles a CR changed
// after the kill within 15 s (takeover times logged). The killed replica
// comes back as the standby, for the next kill. Last, a leader stopped with
// SIGTERM releases its Lease and hands over at once.
func TestLeaderTakeover(t *testing.T) {
	clustertest.SkipIfShort(t)
	kills, others := 3, 0
	if v, err := strconv.Atoi(os.Getenv(haKillsEnv)); err == nil {
		kills = v
	}
	if v, err := strconv.Atoi(os.Getenv(haCRsEnv)); err == nil {
		others = v
	}
	e := newEnv(t)
	ns := e.namespace()
	po := processOptions{Chart: "testdata/charts/many", LeaseNamespace: ns, LeaseName: "ha"}
	e.createApp(ns, "ha", map[string]any{"count": 3, "greeting": "start"}, nil)
	for i := range others {
		e.createApp(ns, "other"+strconv.Itoa(i), map[string]any{"count": 1, "greeting": "start"}, nil)
	}
	leader, standby := electLeader(t, startOperatorProcess(t, po), startOperatorProcess(t, po))
	e.waitConfigMap(ns, "ha-0", "start")
	for i := range others {
		e.waitConfigMap(ns, "other"+strconv.Itoa(i)+"-0", "start")
	}

	// The standby's cost, once the leader has nothing left to do.
	const window = 10 * time.Second
	before := standby.read()
	time.Sleep(window)
	after := standby.read()
	rss, anon := standby.rss()
	perMin := float64(after.total()-before.total()) * float64(time.Minute) / float64(window)
	leaderRSS, leaderAnon := leader.rss()
	t.Logf("standby: %.0f API requests per minute (%v over %s), RSS %.0f MiB (anonymous %.0f); leader: RSS %.0f MiB (anonymous %.0f)",
		perMin, after.Requests, window, rss, anon, leaderRSS, leaderAnon)
	if after.Reconciles != 0 {
		t.Errorf("the standby reconciled %d times", after.Reconciles)
	}
	if w := after.writes() - before.writes(); w != 0 {
		t.Errorf("the standby sent %d writes in %s: %v", w, window, after.Requests)
	}
	// Reading the Lease every 1 to 2.2 retry periods is all it does.
	if limit := float64(time.Minute/DefaultRetryPeriod) + 10; perMin > limit {
		t.Errorf("the standby sent %.0f requests per minute, want at most %.0f", perMin, limit)
	}

	// With other CRs, two of those queued last (in name order, as the
	// informer lists them) change too: one just before the kill, which the
	// leader may not have reconciled, and one after it.
	changedBefore, changedAfter := "", ""
	if others >= 2 {
		changedBefore, changedAfter = "other"+strconv.Itoa(others-2), "other"+strconv.Itoa(others-1)
	}
	var takeovers []time.Duration
	for i := range kills {
		greeting := "kill-" + strconv.Itoa(i)
		if changedBefore != "" {
			e.patchApp(ns, changedBefore, map[string]any{"spec": map[string]any{"greeting": greeting}})
		}
		killed := time.Now()
		leader.kill()
		e.patchApp(ns, "ha", map[string]any{"spec": map[string]any{"greeting": greeting}})
		if changedAfter != "" {
			e.patchApp(ns, changedAfter, map[string]any{"spec": map[string]any{"greeting": greeting}})
		}
		reconciled := e.waitConfigMap(ns, "ha-0", greeting)
		elected := standby.read().Elected
		took := reconciled.Sub(killed)
		takeovers = append(takeovers, took)
		t.Logf("kill %d: the standby leads %s after the kill, and reconciled the CR changed after it %s after the kill",
			i, elected.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond))
		if took >= 15*time.Second {
			t.Errorf("kill %d: reconciling resumed %s after the kill, want under 15 s", i, took)
		}
		if changedAfter != "" {
			late := e.waitConfigMap(ns, changedAfter+"-0", greeting).Sub(killed)
			early := e.waitConfigMap(ns, changedBefore+"-0", greeting).Sub(killed)
			pass := firstPass(t, standby, others+1).Sub(killed)
			t.Logf("kill %d, %d CRs: a CR queued last and changed after the kill reconciled %s after it, one changed just before %s; the first pass over all CRs ended %s after the kill",
				i, others+1, late.Round(time.Millisecond), early.Round(time.Millisecond), pass.Round(time.Millisecond))
		}
		// The killed replica comes back, as the standby.
		leader, standby = standby, startOperatorProcess(t, po)
		standby.waitReport("ready", func(r processReport) bool { return r.Ready })
	}
	slices.Sort(takeovers)
	t.Logf("%d kills, %d CRs: takeover (kill to the first reconcile of a CR changed after it) %v", kills, others+1, takeovers)

	// A leader stopped as the kubelet stops it releases its Lease.
	stopped := time.Now()
	leader.stop()
	e.patchApp(ns, "ha", map[string]any{"spec": map[string]any{"greeting": "stopped"}})
	took := e.waitConfigMap(ns, "ha-0", "stopped").Sub(stopped)
	t.Logf("SIGTERM: the standby reconciled the CR changed after it %s after the signal", took.Round(time.Millisecond))
	if took >= DefaultLeaseDuration {
		t.Errorf("handover after SIGTERM took %s: the Lease was not released", took)
	}
}

// electLeader waits until one of two replicas leads and the other stands
// by, ready; it returns them in that order.
func electLeader(t *testing.T, a, b *operatorProcess) (leader, standby *operatorProcess) {
	t.Helper()
	leads := func(r processReport) bool { return !r.Elected.IsZero() }
	var ra, rb processReport
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ra, rb = a.read(), b.read()
		if ra.Ready && rb.Ready && leads(ra) != leads(rb) {
			if leads(ra) {
				return a, b
			}
			return b, a
		}
		if leads(ra) && leads(rb) {
			t.Fatalf("both replicas lead: %+v, %+v", ra, rb)
		}
	}
	t.Fatalf("no leader with a standby ready: %+v, %+v", ra, rb)
	return nil, nil
}

// firstPass waits until a new leader has reconciled crs CRs (a reconcile
// of each, its first pass), and returns when it saw that.
func firstPass(t *testing.T, p *operatorProcess, crs int) time.Time {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p.read().Reconciles >= crs {
			return time.Now()
		}
	}
	t.Fatalf("the new leader did not reconcile %d CRs within 10 minutes: %+v", crs, p.read())
	return time.Time{}
}
