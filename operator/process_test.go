package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// helperEnv carries an operator process's processOptions, as JSON, from the
// test that starts it.
const helperEnv = "CHARTPILOT_TEST_OPERATOR_PROCESS"

// processOptions configure an operator process of the App kind.
type processOptions struct {
	// Chart is the App watch's chart.
	Chart string
	// MaxConcurrentReconciles; 0 takes the operator's default.
	MaxConcurrentReconciles int
	// LeaseNamespace and LeaseName, when set, make the process a replica
	// electing a leader with that Lease.
	LeaseNamespace, LeaseName string

	// Set by startOperatorProcess: the test API server's kubeconfig, and
	// the directory of the process's report.json.
	Kubeconfig, ReportDir string
}

// processReport is what an operator process says of itself in report.json,
// rewritten whenever it changes.
type processReport struct {
	// Ready: the caches started, the leader election (if any) running.
	Ready bool
	// Elected is when the process started leading (or, without leader
	// election, reconciling).
	Elected time.Time
	// Reconciles by the process's controllers.
	Reconciles int
	// Requests to the API server, by "METHOD resource" (WATCH for watches).
	Requests map[string]int
}

// writes counts the requests that change something: any but reads.
func (r processReport) writes() int {
	n := 0
	for k, v := range r.Requests {
		if !strings.HasPrefix(k, "GET ") && !strings.HasPrefix(k, "WATCH ") {
			n += v
		}
	}
	return n
}

func (r processReport) total() int {
	n := 0
	for _, v := range r.Requests {
		n += v
	}
	return n
}

// TestOperatorProcess is not a test: it is the operator process that
// TestCrashMidInstall, TestKillTrials and TestLeaderTakeover start from this
// test binary, and stop or kill.
func TestOperatorProcess(t *testing.T) {
	clustertest.SkipIfShort(t)
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("runs only as the operator process of other tests")
	}
	var po processOptions
	if err := json.Unmarshal([]byte(raw), &po); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", po.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rep := &reporter{path: filepath.Join(po.ReportDir, "report.json"), requests: map[string]int{},
		reconciles: func() float64 { return reconciles(t) }}
	cfg.Wrap(rep.wrap)
	opts := Options{
		Watches: []watches.Watch{appWatch(t, po.Chart)}, MaxConcurrentReconciles: po.MaxConcurrentReconciles,
		Config: cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0", Log: logr.Discard(),
		LeaderElection: po.LeaseName != "", LeaderElectionID: po.LeaseName, LeaderElectionNamespace: po.LeaseNamespace,
	}
	// SIGTERM stops it as the kubelet does; SIGKILL as a crash does.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	mgr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(readyRunnable{rep}); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-mgr.Elected():
			rep.update(func(r *processReport) { r.Elected = time.Now() })
		case <-ctx.Done():
		}
	}()
	go rep.loop(ctx)
	if err := mgr.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// readyRunnable marks the report ready: the manager starts it, as every
// runnable that needs no leader, once its caches started and right before
// the leader election.
type readyRunnable struct{ rep *reporter }

func (r readyRunnable) Start(context.Context) error {
	r.rep.update(func(p *processReport) { p.Ready = true })
	return nil
}

func (readyRunnable) NeedLeaderElection() bool { return false }

// reporter keeps an operator process's report and writes it out.
type reporter struct {
	path string
	// reconciles reads the process's reconcile counter.
	reconciles func() float64

	mu       sync.Mutex
	report   processReport
	requests map[string]int
}

func (r *reporter) update(f func(*processReport)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.report)
}

// wrap counts each request the operator sends, as the API server would see it.
func (r *reporter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		verb := req.Method
		if req.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		r.mu.Lock()
		r.requests[verb+" "+resourceOf(req.URL.Path)]++
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// resourceOf names the resource of an API path: /api/v1/namespaces/ns/secrets/x
// is secrets, /apis/coordination.k8s.io/v1/namespaces/ns/leases/x leases,
// and a subresource follows: /apis/g/v1/namespaces/ns/apps/x/status is
// apps/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path // discovery and the like
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	}
	return parts[0] + "/" + parts[2]
}

// loop writes the report every 50 ms while it changes, until ctx ends.
func (r *reporter) loop(ctx context.Context) {
	var last []byte
	for {
		r.mu.Lock()
		r.report.Requests = make(map[string]int, len(r.requests))
		for k, v := range r.requests {
			r.report.Requests[k] = v
		}
		r.report.Reconciles = int(r.reconciles())
		data, err := json.Marshal(r.report)
		r.mu.Unlock()
		if err == nil && string(data) != string(last) {
			if err := atomicfile.WriteFile(r.path, data, 0o600); err == nil {
				last = data
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// operatorProcess is an operator running in a process of its own, to kill.
type operatorProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	report string
}

// startOperatorProcess starts an operator for the App kind in a process of
// its own, killed at the end of the test at the latest.
func startOperatorProcess(t *testing.T, po processOptions) *operatorProcess {
	t.Helper()
	dir := t.TempDir()
	po.Kubeconfig, po.ReportDir = filepath.Join(dir, "kubeconfig"), dir
	if err := os.WriteFile(po.Kubeconfig, testEnv.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(po)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOperatorProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &operatorProcess{t: t, cmd: cmd, report: filepath.Join(dir, "report.json")}
	t.Cleanup(p.kill)
	return p
}

// kill sends SIGKILL, as the kernel's OOM killer or a node's loss would, and
// reaps the process. Killing it again does nothing.
func (p *operatorProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		p.t.Errorf("killing the operator: %v", err)
	}
	_ = p.cmd.Wait()
}

// stop sends SIGTERM, as the kubelet does, and waits for the process to end.
func (p *operatorProcess) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Errorf("stopping the operator: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("the operator did not end 30 s after SIGTERM")
		p.kill()
	}
}

// read returns the process's last report (empty before its first).
func (p *operatorProcess) read() processReport {
	p.t.Helper()
	var r processReport
	data, err := os.ReadFile(p.report)
	if errors.Is(err, os.ErrNotExist) {
		return r
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		p.t.Fatalf("%s: %v", p.report, err)
	}
	return r
}

// waitReport waits until the process's report satisfies ok.
func (p *operatorProcess) waitReport(what string, ok func(processReport) bool) processReport {
	p.t.Helper()
	var r processReport
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		r = p.read()
		return ok(r), nil
	})
	if err != nil {
		p.t.Fatalf("operator process %d: never %s; last report %+v", p.cmd.Process.Pid, what, r)
	}
	return r
}

// rss reads the process's resident memory and its anonymous part, in MiB.
func (p *operatorProcess) rss() (total, anon float64) {
	p.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			total = kb / 1024
		}
		if _, err := fmt.Sscanf(line, "RssAnon: %f kB", &kb); err == nil {
			anon = kb / 1024
		}
	}
	return total, anon
}
