package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// The API server goes away under an operator run as `run` runs it by
// default (no leader election: it keeps reconciling through the outage).
// Its CRs' releases reach their health deadline during the outage: each
// reconcile then must write to the API server (the verified revision's
// label), fails, and retries about once a second. The outage is one
// condition of the operator: logged when it starts and when it ends (how
// long, how many CRs waited), never once per CR per retry. The fault must
// have hit: every CR's reconciles kept failing to reach the server (logged
// per CR at V(1) only) for retryFor and more, until the server's return.
func TestAPIServerOutageLoggedOnce(t *testing.T) {
	cs, dyn := clients(t)
	ns := newNamespace(t, cs)
	const shard, crs = "outage-log", 8
	// The deadlines pass soon after the stop, within installSpan of each
	// other (the installs' spread); the outage goes on retryFor after.
	const soon, installSpan, retryFor = 10 * time.Second, 10 * time.Second, 20 * time.Second
	logged := startShardOperator(t, shard)
	// A node back from an earlier outage takes new pods only once its
	// taints are gone.
	waitNodesSchedulable(t, cs)
	created := time.Now()
	for i := range crs {
		name := fmt.Sprintf("quiet-%d", i)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "e2e.example.com/v1", "kind": "Web",
			"metadata": map[string]any{"name": name, "namespace": ns,
				"labels":      map[string]any{operator.ShardLabel: shard},
				"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "1h"}},
			"spec": map[string]any{"message": "hi"},
		}}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range crs {
		waitCondition(t, dyn, ns, fmt.Sprintf("quiet-%d", i), reconciler.TypeDeployed, 90*time.Second)
	}
	if took := time.Since(created); took > installSpan {
		t.Fatalf("the installs took %s, want at most %s", took.Round(100*time.Millisecond), installSpan)
	}
	// Ready: at its deadline a release whose objects are ready is verified
	// (a write); one whose objects are not waits for them, from the cache.
	for i := range crs {
		waitCondition(t, dyn, ns, fmt.Sprintf("quiet-%d", i), reconciler.TypeReady, 3*time.Minute)
	}
	// Each revision was deployed after created: a deadline of the time
	// since then and soon passes at least soon from now, and at most
	// installSpan later (the health deadline annotation is read at every
	// reconcile, and changes no release).
	deadline := (time.Since(created) + soon).Round(time.Second) + time.Second
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, reconciler.AnnotationHealthDeadline, deadline.String()))
	for i := range crs {
		if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), fmt.Sprintf("quiet-%d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the operator sees the new deadlines
	outageFor := soon + installSpan + retryFor

	stopped := time.Now()
	if err := process.Stop(filepath.Join(local.StateDir(), "run", cluster.APIServer+".pid"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outageFor)
	restarting := time.Now()
	if err := local.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("the API server was away %s, from %s to %s", back.Sub(stopped).Round(100*time.Millisecond), stopped.Format("15:04:05.000"), back.Format("15:04:05.000"))
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(logged.since(stopped, reconciler.OutageEndMessage)) > 0, nil
	})
	if err != nil {
		t.Errorf("no end of the outage logged a minute after the API server's return; logged:\n%s", logged.dump(created))
	}
	// Reconciles that were under way when the server came back end now.
	time.Sleep(5 * time.Second)
	running(t)

	starts, ends := logged.since(stopped, reconciler.OutageStartMessage), logged.since(stopped, reconciler.OutageEndMessage)
	retries := logged.since(stopped, "reconcile could not reach the API server")
	t.Logf("since the stop: %d line(s) at level 0 or errors, %d outage start, %d outage end (%s), %d per-CR retries at V(1)",
		len(logged.loud(stopped)), len(starts), len(ends), strings.Join(texts(ends), ""), len(retries))
	if len(starts) != 1 || len(ends) != 1 {
		t.Errorf("the outage logged %d start line(s) and %d end line(s), want 1 each", len(starts), len(ends))
	}
	if len(starts) > 0 && !strings.Contains(starts[0].text, "connection refused") {
		t.Errorf("the start line does not say why: %s", starts[0].text)
	}
	// The per-CR lines are gone: nothing else at level 0 or as an error,
	// the CRs' failures least of all.
	for _, l := range logged.loud(stopped) {
		if !strings.Contains(l.text, reconciler.OutageStartMessage) && !strings.Contains(l.text, reconciler.OutageEndMessage) {
			t.Errorf("logged during the outage: %s", l.text)
		}
	}
	// The fault hit: every CR retried throughout the outage.
	names := map[string]bool{}
	for _, l := range retries {
		if m := nameField.FindStringSubmatch(l.text); m != nil {
			names[m[1]] = true
		}
	}
	if len(names) != crs {
		t.Errorf("%d CRs retried during the outage, want %d", len(names), crs)
	}
	if len(retries) > 0 && len(ends) > 0 {
		// The server answers before `cluster up` returns (which waits for
		// every component): the end line says when. While it starts, a
		// request may wait for it rather than fail (seen under load: 6 s
		// without a retry line), so the retries are required up to the
		// restart, not up to the end.
		first, last, end := retries[0].at, retries[len(retries)-1].at, ends[0].at
		t.Logf("retries from %s after the stop to %s before the restart; the outage's end logged %s after the restart",
			first.Sub(stopped).Round(100*time.Millisecond), restarting.Sub(last).Round(100*time.Millisecond), end.Sub(restarting).Round(100*time.Millisecond))
		if last.Sub(first) < retryFor || last.Before(restarting.Add(-5*time.Second)) {
			t.Errorf("the CRs retried from %s to %s; the API server stopped at %s, restarted at %s, answered again at %s: want retries over at least %s, up to the restart",
				first.Format(time.StampMilli), last.Format(time.StampMilli), stopped.Format(time.StampMilli), restarting.Format(time.StampMilli), end.Format(time.StampMilli), retryFor)
		}
	}
	if min := crs * int(retryFor/(2*time.Second)); len(retries) < min {
		t.Errorf("%d retries during the outage, want at least %d (%d CRs, at most 2 s apart over %s)", len(retries), min, crs, retryFor)
	}
	// And at most a few a second per CR: a loop without delay would be
	// thousands.
	if away := time.Since(stopped); len(retries) > crs*3*(int(away/time.Second)+1) {
		t.Errorf("%d retries over %s of %d CRs: more than 3 a second each, want about 1", len(retries), away.Round(time.Second), crs)
	}
	if len(ends) == 1 {
		m := endFields.FindStringSubmatch(ends[0].text)
		if m == nil {
			t.Fatalf("the end line does not say how long and how many: %s", ends[0].text)
		}
		after, _ := time.ParseDuration(m[1])
		waited, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		if after < retryFor || waited != crs || failed < len(retries) {
			t.Errorf("the end line says %s, %d CRs and %d reconciles; want at least %s, %d and %d", after, waited, failed, retryFor, crs, len(retries))
		}
	}
}

// waitNodesSchedulable waits until every node is Ready without a taint
// of the node lifecycle controller (an unreachable or not-ready node).
func waitNodesSchedulable(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	began := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) == 0 {
			return false, nil
		}
		for _, n := range nodes.Items {
			for _, taint := range n.Spec.Taints {
				if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
					return false, nil
				}
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the nodes are not schedulable: %v", err)
	}
	t.Logf("nodes schedulable after %s", time.Since(began).Round(100*time.Millisecond))
}

var (
	nameField = regexp.MustCompile(`"name"="([^"]+)"`)
	endFields = regexp.MustCompile(`"after"="([^"]+)" "crs"=(\d+) "reconciles"=(\d+)`)
)

// startShardOperator runs, until t ends, an operator of the shard's Web
// CRs without leader election; it logs at V(1) into the returned log.
func startShardOperator(t *testing.T, shard string) *lineLog {
	t.Helper()
	ch, err := loader.Load(filepath.Join("testdata", "chart"))
	if err != nil {
		t.Fatal(err)
	}
	logged := &lineLog{}
	opts := operator.Options{
		Watches: []watches.Watch{{Group: "e2e.example.com", Version: "v1", Kind: "Web", Chart: "bench",
			LoadedChart: ch, LabelSelector: labels.Everything(), DryRunOption: watches.DryRunClient}},
		Config: cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		Shard: shard, SkipNameValidation: true,
		Log: funcr.New(logged.add, funcr.Options{Verbosity: 1}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- operator.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the shard's operator: %v", err)
		}
	})
	return logged
}

// lineLog keeps an operator's log lines with their times.
type lineLog struct {
	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func (l *lineLog) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, logLine{at: time.Now(), text: prefix + " " + args})
}

// since are the lines logged from t on that hold s.
func (l *lineLog) since(t time.Time, s string) []logLine {
	return l.filter(t, func(text string) bool { return strings.Contains(text, s) })
}

// loud are the lines logged from t on at level 0 or as errors (funcr
// gives errors no level).
func (l *lineLog) loud(t time.Time) []logLine {
	return l.filter(t, func(text string) bool {
		return !strings.Contains(text, `"level"=`) || strings.Contains(text, `"level"=0 `)
	})
}

func (l *lineLog) filter(t time.Time, keep func(string) bool) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, line := range l.lines {
		if !line.at.Before(t) && keep(line.text) {
			out = append(out, line)
		}
	}
	return out
}

// dump is every line logged from t on, the last 100 of them.
func (l *lineLog) dump(t time.Time) string {
	all := l.since(t, "")
	var b strings.Builder
	for _, line := range all[max(0, len(all)-100):] {
		fmt.Fprintf(&b, "%s %s\n", line.at.Format("15:04:05.000"), line.text)
	}
	return b.String()
}

func texts(lines []logLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}
