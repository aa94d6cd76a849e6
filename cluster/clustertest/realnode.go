package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/node"
)

// RequireRealNode takes the machine's real node for the rest of t (see
// LockRealNode), then skips t when this host cannot run a real node, naming
// what is missing; under CI (CI=true), whose machine is set up for the real
// node by .ci/run, it fails t instead: a missing precondition there would
// otherwise turn every real-node test into a silent skip. The lock comes
// first: another test's node is no reason to skip.
func RequireRealNode(t testing.TB) {
	t.Helper()
	SkipIfShort(t)
	LockRealNode(t)
	requirePossible(t)
}

// requirePossible skips t, or fails it under CI, when this host cannot
// run a real node.
func requirePossible(t testing.TB) {
	t.Helper()
	err := cluster.RealNodePossible()
	switch {
	case err == nil:
	case os.Getenv("CI") == "true":
		t.Fatalf("CI must run the real node's tests, but %v", err)
	default:
		t.Skipf("%v (under CI=true this fails)", err)
	}
}

// SharedRealNode is one real-node cluster for the tests of a binary that
// can share it (each in namespaces of its own): started by the first test
// that asks, holding the machine's real node until Close, which Main (the
// package's TestMain) calls after the tests. A cluster start costs a real-node test more than
// most of what it proves.
type SharedRealNode struct {
	// Options are the cluster's; Node, StateDir and Out are set by Get.
	Options cluster.Options

	mu     sync.Mutex
	c      *cluster.Cluster
	err    error // the start's, reported to every test after it
	dir    string
	out    bytes.Buffer
	unlock func()
}

// Get returns the shared cluster, starting it at the first call, with
// RequireRealNode's rules: skipped with -short, and skipped (failed under
// CI) where the host cannot run a real node.
func (s *SharedRealNode) Get(t *testing.T) *cluster.Cluster {
	t.Helper()
	SkipIfShort(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil && s.err == nil {
		s.start(t)
	}
	if s.err != nil {
		t.Fatalf("the shared cluster with a real node: %v\n%s", s.err, s.out.String())
	}
	return s.c
}

func (s *SharedRealNode) start(t *testing.T) {
	t.Helper()
	unlock, err := lockRealNode(t.Context(), t.Logf)
	if err != nil {
		t.Fatalf("locking the real node: %v", err)
	}
	if err := cluster.RealNodePossible(); err != nil {
		unlock() // each test says so on its own
		requirePossible(t)
	}
	s.unlock = unlock
	if s.dir, s.err = os.MkdirTemp("", sharedPrefix); s.err != nil {
		return
	}
	opts := s.Options
	opts.StateDir, opts.Node, opts.Out = filepath.Join(s.dir, "cluster"), cluster.NodeReal, &s.out
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if s.c, s.err = cluster.New(opts); s.err != nil {
		return
	}
	began := time.Now()
	// Not the test's context: the cluster outlives the test that starts it.
	s.err = s.c.Up(context.Background())
	t.Logf("shared cluster with a real node up in %s", time.Since(began).Round(time.Second))
}

// sharedPrefix names the directories SharedRealNode starts clusters in.
const sharedPrefix = "chartpilot-realnode-"

// reapOrphan stops the shared cluster of a test binary that died without
// stopping it: a test that panics ends its binary before TestMain's Close.
// Its caller holds the machine's real-node lock, which that binary held
// while it lived, so the cluster is no one's now; left running, it would
// fail every later real-node test. Only a cluster in a directory of
// SharedRealNode's own is touched, never one a user started.
func reapOrphan(logf func(string, ...any)) error {
	stateDir, ok := sharedStateDir(node.Claimant(), os.TempDir())
	if !ok {
		return nil
	}
	logf("stopping the cluster in %s, which a test binary that died left running", stateDir)
	c, err := cluster.New(cluster.Options{StateDir: stateDir})
	if err != nil {
		return fmt.Errorf("stopping the cluster a dead test binary left: %w", err)
	}
	if err := c.Down(context.Background(), cluster.DownOptions{Wipe: true}); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
		return fmt.Errorf("stopping the cluster a dead test binary left: %w", err)
	}
	return os.RemoveAll(filepath.Dir(stateDir))
}

// sharedStateDir is the state directory of the cluster whose node
// directory claimant is, when SharedRealNode made it (under tmp).
func sharedStateDir(claimant, tmp string) (string, bool) {
	stateDir := filepath.Dir(claimant) // <tmp>/chartpilot-realnode-*/cluster/node
	dir := filepath.Dir(stateDir)
	ok := filepath.Base(claimant) == "node" && filepath.Base(stateDir) == "cluster" &&
		filepath.Dir(dir) == filepath.Clean(tmp) && strings.HasPrefix(filepath.Base(dir), sharedPrefix)
	return stateDir, ok
}

// Main is a TestMain of a package sharing s: it runs the tests, stops
// the shared cluster, and exits, failing when the stop fails.
func (s *SharedRealNode) Main(m *testing.M) {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the shared cluster:", err)
		code = 1
	}
	os.Exit(code)
}

// Close stops the cluster, if one started, deletes its state and gives
// the real node back.
func (s *SharedRealNode) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.c != nil {
		err = s.c.Down(context.Background(), cluster.DownOptions{Wipe: true})
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	if s.unlock != nil {
		s.unlock()
	}
	return err
}

// Decoys are what a Kubernetes of the host itself would have, planted so
// that a test can check the real node leaves them exactly as they were: a
// process in a /kubepods cgroup, a KUBE-SERVICES chain with a rule (and a
// jump to it), a cni0 bridge.
type Decoys struct {
	proc     *exec.Cmd
	cgroups  []string
	iptables string
	// ip6tables is the IPv6 tables': the node's rules live in its own
	// network namespace, for both families.
	ip6tables string
	bridge    string
	// madeBridge and madeChain: this test made them, and removes them. A
	// bridge or chain of that name already there (the host's own
	// Kubernetes, or a run that was killed) is the decoy as it is: checked,
	// never changed or removed.
	madeBridge, madeChain bool
}

// decoyBridge and decoyCgroup are the decoys' names; the chain is
// kube-proxy's own name.
const (
	decoyBridge = "cni0"
	decoyCgroup = "/kubepods/chartpilot-decoy"
	decoyChain  = "KUBE-SERVICES"
	// decoyDest is a documentation address (RFC 5737): the rules match
	// nothing real.
	decoyDest = "192.0.2.1/32"
)

// PlantDecoys plants the decoys for the rest of t; it needs root, iptables
// and ip, as the real node does. Check compares them with how they were.
func PlantDecoys(t testing.TB) *Decoys {
	t.Helper()
	d := &Decoys{}
	t.Cleanup(d.remove)
	var plant [][]string
	if linkState(t, decoyBridge) == "" {
		d.madeBridge = true
		plant = append(plant, []string{"ip", "link", "add", decoyBridge, "type", "bridge"})
	}
	if exec.Command("iptables", "-t", "nat", "-S", decoyChain).Run() != nil {
		d.madeChain = true
		plant = append(plant,
			[]string{"iptables", "-t", "nat", "-N", decoyChain},
			[]string{"iptables", "-t", "nat", "-A", decoyChain, "-d", decoyDest, "-p", "tcp", "--dport", "9", "-m", "comment", "--comment", "chartpilot decoy", "-j", "RETURN"},
			[]string{"iptables", "-t", "nat", "-A", "OUTPUT", "-d", decoyDest, "-j", decoyChain})
	}
	for _, args := range plant {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("planting a decoy: %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	d.proc = exec.Command("sleep", "3600")
	if err := d.proc.Start(); err != nil {
		t.Fatalf("starting the decoy process: %v", err)
	}
	for _, dir := range decoyCgroupDirs() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("creating decoy cgroup: %v", err)
		}
		d.cgroups = append(d.cgroups, dir)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(d.proc.Process.Pid)), 0o644); err != nil {
			t.Fatalf("moving the decoy process into %s: %v", dir, err)
		}
	}
	if !inDecoyCgroup(d.proc.Process.Pid) {
		t.Fatalf("the decoy process is in no %s cgroup", decoyCgroup)
	}
	d.iptables = tablesState(t, "iptables-save")
	d.ip6tables = tablesState(t, "ip6tables-save")
	d.bridge = linkState(t, decoyBridge)
	if !strings.Contains(d.iptables, ":"+decoyChain+" ") || d.bridge == "" {
		t.Fatalf("decoys not in place:\n%s\n%s", d.iptables, d.bridge)
	}
	return d
}

// Check fails t for each decoy that is not exactly as planted; when says
// after what.
func (d *Decoys) Check(t testing.TB, when string) {
	t.Helper()
	pid := d.proc.Process.Pid
	if syscall.Kill(pid, 0) != nil || !inDecoyCgroup(pid) {
		t.Errorf("after %s: the decoy process %d in %s is gone", when, pid, decoyCgroup)
	}
	if got := tablesState(t, "iptables-save"); got != d.iptables {
		t.Errorf("after %s: the host's iptables changed:\nbefore:\n%s\nafter:\n%s", when, d.iptables, got)
	}
	if got := tablesState(t, "ip6tables-save"); got != d.ip6tables {
		t.Errorf("after %s: the host's ip6tables changed:\nbefore:\n%s\nafter:\n%s", when, d.ip6tables, got)
	}
	if got := linkState(t, decoyBridge); got != d.bridge {
		t.Errorf("after %s: bridge %s changed: was %q, is %q", when, decoyBridge, d.bridge, got)
	}
}

func (d *Decoys) remove() {
	if d.proc != nil && d.proc.Process != nil {
		_ = d.proc.Process.Kill()
		_ = d.proc.Wait()
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, dir := range d.cgroups {
		for syscall.Rmdir(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if d.madeChain {
		_ = exec.Command("iptables", "-t", "nat", "-D", "OUTPUT", "-d", decoyDest, "-j", decoyChain).Run()
		_ = exec.Command("iptables", "-t", "nat", "-F", decoyChain).Run()
		_ = exec.Command("iptables", "-t", "nat", "-X", decoyChain).Run()
	}
	if d.madeBridge {
		_ = exec.Command("ip", "link", "del", decoyBridge).Run()
	}
}

// decoyCgroupDirs are the decoy cgroup in cgroup v2's single hierarchy, or
// in the v1 pids hierarchy (one that needs no setting to take a process).
func decoyCgroupDirs() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup" + decoyCgroup}
	}
	return []string{"/sys/fs/cgroup/pids" + decoyCgroup}
}

func inDecoyCgroup(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && strings.Contains(string(data), ":"+decoyCgroup+"\n")
}

// counters are iptables-save's packet and byte counts, which traffic moves.
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// tablesState is what save (iptables-save, ip6tables-save) prints of the
// host's rules in every table, without counters and
// comment lines.
func tablesState(t testing.TB, save string) string {
	t.Helper()
	out, err := exec.Command(save).Output()
	if err != nil {
		t.Fatalf("%s: %v", save, err)
	}
	var b bytes.Buffer
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "#") {
			b.WriteString(counters.ReplaceAllString(line, "") + "\n")
		}
	}
	return b.String()
}

// linkState is a link's index, name, flags and address, or "" when it is
// gone (a link made again has another index).
func linkState(t testing.TB, name string) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show", "dev", name).Output()
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(out)), " ")
}
