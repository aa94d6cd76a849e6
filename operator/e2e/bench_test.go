package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/testbin"
	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/watches"
)

var benchGVR = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "benchapps"}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: benchapps.bench.example.com
spec:
  group: bench.example.com
  names: {kind: BenchApp, listKind: BenchAppList, plural: benchapps, singular: benchapp}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// operatorUnderTest is a Helm operator binary and how to run it.
type operatorUnderTest struct {
	name string
	args func(watches string, metricsPort, probePort int) []string
	path string
	// watches, when set, is the operator's own watches file.
	watches string
	// profile: the operator serves Go's profiles with --pprof-bind-address.
	profile bool
}

// result is one operator's numbers.
type result struct {
	crs          int
	deploy       time.Duration
	rssMiB       float64
	peakMiB      float64
	anonMiB      float64 // the heap and stacks part of RSS; the rest is the binary's pages
	idleCPU      float64 // CPU seconds per minute once all CRs are deployed
	idleRequests float64 // API requests per CR per minute once deployed
	metricsKiB   float64 // the metrics endpoint's size once deployed
	// deployRequests are the API requests per CR until all are Deployed.
	deployRequests float64
	// idleWatches are the watches chartpilot renewed in the idle minute,
	// the only requests it may send then.
	idleWatches float64
	// deployCPU and clusterCPU are the CPU seconds the operator and the
	// cluster's components spent until all were Deployed.
	deployCPU, clusterCPU float64
}

// benchEnv is what every benchmark of the package runs on: a local cluster
// (kwok node, no OLM) with the BenchApp CRD, the runtime-only operator
// binary built as the image builds it, and the watches file of the chart.
type benchEnv struct {
	cluster    *cluster.Cluster
	cfg        *rest.Config
	dyn        dynamic.Interface
	chartpilot string
	chart      string // the chart's directory
	watches    string
}

func setupBench(b *testing.B) *benchEnv {
	clustertest.SkipIfShort(b)
	ctx := context.Background()
	dir := b.TempDir()
	c, err := cluster.New(cluster.Options{StateDir: filepath.Join(dir, "cluster"), WithoutOLM: true, Out: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Up(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })
	cfg, err := c.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	dyn := dynamic.NewForConfigOrDie(cfg)
	kubectl(b, c, "apply", "-f", writeFile(b, dir, "crd.yaml", crd))
	// Both operators map the kind through discovery as they start.
	if err := crdready.Wait(ctx, cfg, []string{"benchapps.bench.example.com"}, crdready.Options{}); err != nil {
		b.Fatal(err)
	}

	// The binary the operator image runs.
	chartpilot := testbin.Operator(b)
	chart, err := filepath.Abs("testdata/chart")
	if err != nil {
		b.Fatal(err)
	}
	watches := writeFile(b, dir, "watches.yaml", watchEntry(chart, ""))
	return &benchEnv{cluster: c, cfg: cfg, dyn: dyn, chartpilot: chartpilot, chart: chart, watches: watches}
}

func BenchmarkRuntime(b *testing.B) {
	env := setupBench(b)
	c, cfg, dyn, chartpilot, watches := env.cluster, env.cfg, env.dyn, env.chartpilot, env.watches
	chartpilotArgs := func(secureFlag bool) func(w string, m, p int) []string {
		return func(w string, m, p int) []string {
			args := []string{"run", "--watches-file", w, "--kubeconfig", c.KubeconfigPath(), "--max-concurrent-reconciles", "4", "--reconcile-period", "20s"}
			if secureFlag {
				args = append(args, "--metrics-secure=false")
			}
			return append(args, "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", m), "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", p))
		}
	}
	ops := []operatorUnderTest{{name: "chartpilot", path: chartpilot, args: chartpilotArgs(true), profile: true}}
	if os.Getenv("CHARTPILOT_BENCH_SSA") != "" {
		ssa := writeFile(b, filepath.Dir(watches), "watches-ssa.yaml", watchEntry(env.chart, "  serverSideApply: true\n"))
		ops = append(ops, operatorUnderTest{name: "chartpilot-ssa", path: chartpilot, args: chartpilotArgs(true), watches: ssa})
	}
	if before := os.Getenv("CHARTPILOT_BENCH_BASELINE"); before != "" {
		// An earlier build of chartpilot-operator (e.g. on Helm 3), from
		// before --metrics-secure.
		ops = append(ops, operatorUnderTest{name: "chartpilot-before", path: before, args: chartpilotArgs(false)})
	}
	if peer := os.Getenv("CHARTPILOT_PEER_HELM_OPERATOR"); peer != "" {
		ops = append(ops, operatorUnderTest{
			name: "helm-operator-plugins", path: peer,
			args: func(w string, m, p int) []string {
				return []string{"run", "--watches-file", w, "--max-concurrent-reconciles", "4", "--reconcile-period", "20s",
					"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", m), "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", p)}
			},
		})
	} else {
		b.Log("CHARTPILOT_PEER_HELM_OPERATOR is not set: measuring chartpilot alone")
	}

	fl, err := newFloor(cfg, env.chart, 4)
	if err != nil {
		b.Fatal(err)
	}
	results := map[string][]result{}
	defer func() { logGrowth(b, results) }()
	for _, crs := range sizes(b) {
		// The floor before and after each operator's measure, which is
		// read against the mean of the two: on a shared machine the load
		// changes within a run, and the spread of the two says by how
		// much. With CHARTPILOT_BENCH_ROUNDS, the measures alternate that
		// many times and the median ratio counts.
		var floors []time.Duration
		runFloor := func() {
			b.Run(fmt.Sprintf("floor/%dCRs", crs), func(b *testing.B) {
				for range b.N {
					t := measureFloor(b, c, fl, crs)
					floors = append(floors, t)
					b.ReportMetric(t.Seconds(), "s-to-deployed")
					b.ReportMetric(float64(crs)/t.Seconds(), "CRs/s")
					b.Logf("floor, %d CRs: deployed in %s (%.1f CRs/s)", crs, t.Round(100*time.Millisecond), float64(crs)/t.Seconds())
				}
			})
		}
		ratios := map[string][]float64{}
		runFloor()
		for range rounds(b) {
			for _, op := range ops {
				var took time.Duration
				b.Run(fmt.Sprintf("%s/%dCRs", op.name, crs), func(b *testing.B) {
					for range b.N {
						r := measure(b, c, dyn, op, watches, crs)
						took = r.deploy
						reportResult(b, r)
						if op.name == "chartpilot" && !deployOnly() {
							b.ReportMetric(r.idleWatches, "watches/idle-min")
						}
						results[op.name] = append(results[op.name], r)
					}
				})
				before := floors[len(floors)-1]
				runFloor()
				after := floors[len(floors)-1]
				if took == 0 {
					continue
				}
				ratio := took.Seconds() / ((before + after) / 2).Seconds()
				ratios[op.name] = append(ratios[op.name], ratio)
				b.Logf("%s, %d CRs: %.2fx the floor's time (%s; the floor %s before, %s after)", op.name, crs, ratio,
					took.Round(100*time.Millisecond), before.Round(100*time.Millisecond), after.Round(100*time.Millisecond))
			}
		}
		for _, op := range ops {
			if len(ratios[op.name]) == 0 {
				continue
			}
			b.Run(fmt.Sprintf("%s-over-floor/%dCRs", op.name, crs), func(b *testing.B) {
				m := median(ratios[op.name])
				b.ReportMetric(m, "x-floor")
				b.Logf("%s, %d CRs: %.2fx the floor's time (median of %.2f)", op.name, crs, m, ratios[op.name])
			})
		}
	}
}

// logGrowth logs, for each operator, what each CR beyond the smaller count
// costs between consecutive counts: memory, and time to Deployed.
func logGrowth(b *testing.B, results map[string][]result) {
	for name, rs := range results {
		for i := 1; i < len(rs); i++ {
			lo, hi := rs[i-1], rs[i]
			extra := float64(hi.crs - lo.crs)
			b.Logf("%s, %d -> %d CRs: %.1f KiB of RSS (%.1f anonymous) and %.0f ms to Deployed per extra CR",
				name, lo.crs, hi.crs, (hi.rssMiB-lo.rssMiB)*1024/extra, (hi.anonMiB-lo.anonMiB)*1024/extra,
				(hi.deploy-lo.deploy).Seconds()*1000/extra)
		}
	}
}

func reportResult(b *testing.B, r result) {
	b.ReportMetric(r.deploy.Seconds(), "s-to-deployed")
	b.ReportMetric(float64(r.crs)/r.deploy.Seconds(), "CRs/s")
	b.ReportMetric(r.deployRequests, "requests/CR-to-deploy")
	b.ReportMetric(r.deployCPU, "cpu-s-to-deploy")
	b.ReportMetric(r.clusterCPU, "cluster-cpu-s-to-deploy")
	if deployOnly() {
		return
	}
	b.ReportMetric(r.rssMiB, "MiB-rss")
	b.ReportMetric(r.peakMiB, "MiB-peak")
	b.ReportMetric(r.anonMiB, "MiB-anon")
	b.ReportMetric(r.idleCPU, "cpu-s/idle-min")
	b.ReportMetric(r.idleRequests, "requests/CR/idle-min")
	b.ReportMetric(r.metricsKiB, "KiB-metrics")
}

// rounds is CHARTPILOT_BENCH_ROUNDS, default 1.
func rounds(b *testing.B) int {
	v := os.Getenv("CHARTPILOT_BENCH_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("CHARTPILOT_BENCH_ROUNDS: %q is not a count", v)
	}
	return n
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// deployOnly: CHARTPILOT_BENCH_DEPLOY_ONLY is set, and each measure ends
// once all CRs are Deployed, without the idle minute and memory.
func deployOnly() bool { return os.Getenv("CHARTPILOT_BENCH_DEPLOY_ONLY") != "" }

func measure(b *testing.B, c *cluster.Cluster, dyn dynamic.Interface, op operatorUnderTest, watches string, crs int) result {
	ns := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(op.name, "-", ""), crs, time.Now().Unix()%100000)
	kubectl(b, c, "create", "namespace", ns)
	defer drain(b, c, dyn, ns)

	metricsPort, probePort := freePort(b), freePort(b)
	logFile := filepath.Join(b.TempDir(), op.name+".log")
	if op.watches != "" {
		watches = op.watches
	}
	args := op.args(watches, metricsPort, probePort)
	env := []string{"KUBECONFIG=" + c.KubeconfigPath(), "WATCH_NAMESPACE=" + ns}
	profiles, pprofPort := os.Getenv("CHARTPILOT_BENCH_PROFILES"), 0
	if profiles != "" && op.profile {
		pprofPort = freePort(b)
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		// One sample per 4 KiB allocated, not per 512: the heap of a few
		// hundred CRs is tens of MiB, too little for the default to say
		// what each CR holds.
		env = append(env, "GODEBUG=memprofilerate=4096")
	}
	d, err := process.Start(process.Spec{
		Name: op.name, Path: op.path, Args: args,
		Env:     env,
		Dir:     filepath.Dir(watches),
		LogFile: logFile, PIDFile: logFile + ".pid",
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = process.Stop(logFile+".pid", 10*time.Second) }()

	var stopProfiles func()
	if pprofPort != 0 {
		stopProfiles = cpuProfiles(b, pprofPort, filepath.Join(profiles, fmt.Sprintf("%s-%d", op.name, crs)))
	}
	clusterBefore, cpuBefore, serverBefore := takeClusterCPU(b, c), cpuSeconds(b, d.PID()), takeServerRequests(b, c)
	b.ResetTimer()
	began := time.Now()
	createCRs(b, dyn, ns, crs, 0, nil)
	err = waitDeployed(dyn, ns, crs, func() error {
		select {
		case <-d.Exited():
			return fmt.Errorf("%s exited: %s", op.name, process.LogTail(logFile, 10))
		default:
			return nil
		}
	})
	deploy := time.Since(began)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: not all CRs Deployed: %v\n%s", op.name, err, process.LogTail(logFile, 20))
	}
	deployRequests := requests(b, metricsPort) / float64(crs)
	deployCPU := cpuSeconds(b, d.PID()) - cpuBefore
	clusterCPU, byComponent := takeClusterCPU(b, c).since(clusterBefore)
	// Said now: the steady state below can take long to reach at a large
	// fleet, and a failure there must not lose the time to deploy.
	b.Logf("%s, %d CRs: deployed in %s (%.1f CRs/s, %.1f API requests per CR)", op.name, crs, deploy.Round(100*time.Millisecond), float64(crs)/deploy.Seconds(), deployRequests)
	b.Logf("%s, %d CRs: CPU to deploy: operator %.1f s, cluster %.1f s (%s)", op.name, crs, deployCPU, clusterCPU, byComponent)
	b.Logf("%s, %d CRs: the API server's requests: %s", op.name, crs, takeServerRequests(b, c).since(serverBefore, crs))
	if n := throttled(logFile); n > 0 {
		b.Logf("%s, %d CRs: client-go logged %d waits of over a second for its rate limit (QPS, burst)", op.name, crs, n)
	}
	if stopProfiles != nil {
		stopProfiles()
	}

	if deployOnly() {
		// Memory as the last CR shows Deployed, not at rest: without the
		// idle minute, that is what there is to say.
		rss, peak, anon := memoryMiB(b, d.PID())
		b.Logf("%s, %d CRs: RSS when all were Deployed %.0f MiB (peak %.0f, anonymous %.0f)", op.name, crs, rss, peak, anon)
		return result{crs: crs, deploy: deploy, deployRequests: deployRequests, deployCPU: deployCPU, clusterCPU: clusterCPU}
	}
	// Steady state: every workload available (readiness no longer changes,
	// for either operator) and the operator quiet; from then on it only
	// re-checks. Measured earlier, the idle minute counted the status
	// writes of Deployments still becoming ready.
	waitAvailable(b, dyn, ns, crs)
	if op.name == "chartpilot" {
		waitRecordedHealthy(b, dyn, ns, crs)
	}
	waitQuiet(b, metricsPort)
	cpu0, req0, verbs0 := cpuSeconds(b, d.PID()), requests(b, metricsPort), verbs(b, metricsPort)
	const idle = 60 * time.Second
	time.Sleep(idle)
	cpu1, req1, verbs1 := cpuSeconds(b, d.PID()), requests(b, metricsPort), verbs(b, metricsPort)
	rss, peak, anon := memoryMiB(b, d.PID())
	if pprofPort != 0 {
		saveHeapProfile(b, pprofPort, filepath.Join(profiles, fmt.Sprintf("%s-%d.heap.pb.gz", op.name, crs)))
	}
	r := result{
		crs: crs, deploy: deploy, deployRequests: deployRequests, deployCPU: deployCPU, clusterCPU: clusterCPU,
		rssMiB: rss, peakMiB: peak, anonMiB: anon,
		idleCPU:      (cpu1 - cpu0) * time.Minute.Seconds() / idle.Seconds(),
		idleRequests: (req1 - req0) / float64(crs) * time.Minute.Seconds() / idle.Seconds(),
		metricsKiB:   float64(metricsSize(b, metricsPort)) / 1024,
	}
	b.Logf("%s, %d CRs: RSS %.0f MiB (peak %.0f, anonymous %.0f); idle: %.2f CPU-s/min, %.2f API requests per CR per minute; metrics endpoint %.0f KiB",
		op.name, crs, r.rssMiB, r.peakMiB, r.anonMiB, r.idleCPU, r.idleRequests, r.metricsKiB)
	// A release in sync costs no request. The only requests of an idle
	// chartpilot are its informers' watches, each renewed every 5 to 10
	// minutes: it counts them apart (operator.RequestsMetric), and any
	// other request fails the bench.
	if strings.HasPrefix(op.name, "chartpilot") {
		var sent []string
		for v, n := range verbs1 {
			if n -= verbs0[v]; n > 0 && v != operator.VerbWatch {
				sent = append(sent, fmt.Sprintf("%.0f %s", n, v))
			}
		}
		r.idleWatches = verbs1[operator.VerbWatch] - verbs0[operator.VerbWatch]
		if len(sent) > 0 {
			slices.Sort(sent)
			b.Errorf("FAIL: chartpilot sent API requests in an idle minute at %d CRs: %s (a release in sync must cost none; watches renewed: %.0f)",
				crs, strings.Join(sent, ", "), r.idleWatches)
		}
	}
	return r
}

// drain deletes a measure's namespace and waits until it is gone, so that
// the next measure does not share the API server with its deletion (the
// deletion of a namespace that held 1000 releases takes as much work as
// deploying a good part of them). CRs whose operator stopped keep their
// finalizer: it is removed, as nothing will uninstall them now.
func drain(b *testing.B, c *cluster.Cluster, dyn dynamic.Interface, ns string) {
	b.Helper()
	ctx := context.Background()
	kubectl(b, c, "delete", "namespace", ns, "--wait=false")
	crs, err := dyn.Resource(benchGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("listing the CRs of %s: %v", ns, err)
	}
	for _, cr := range crs.Items {
		if len(cr.GetFinalizers()) == 0 {
			continue
		}
		_, err := dyn.Resource(benchGVR).Namespace(ns).Patch(ctx, cr.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.Fatalf("removing the finalizer of %s/%s: %v", ns, cr.GetName(), err)
		}
	}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(namespaces).Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		b.Logf("namespace %s is still being deleted", ns)
	}
	settle(b, c)
}

// settle waits until the cluster is quiet: the namespace is gone well before
// kube-controller-manager's garbage collector and workload controllers have
// caught up with it, and the next measure would pay for their work (their
// GETs of owners showed as 0.1-0.8 extra GETs per CR of a kind there).
// Quiet is three seconds in a row under quietCores of CPU.
func settle(b *testing.B, c *cluster.Cluster) {
	b.Helper()
	const quietCores, quietSeconds, limit = 0.15, 3, 5 * time.Minute
	began, quiet := time.Now(), 0
	last := takeClusterCPU(b, c)
	for quiet < quietSeconds {
		if time.Since(began) > limit {
			b.Logf("the cluster was still busy %s after the last measure", limit)
			return
		}
		time.Sleep(time.Second)
		now := takeClusterCPU(b, c)
		if spent, _ := now.since(last); spent < quietCores {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
}

// createCRs creates crs BenchApps in ns, 16 at a time, and hands each to
// created (when not nil) as it is created. With shards, the CRs are labelled
// round-robin for shards s0, s1...
func createCRs(b *testing.B, dyn dynamic.Interface, ns string, crs, shards int, created func(*unstructured.Unstructured)) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range crs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "bench.example.com/v1", "kind": "BenchApp",
				"metadata": map[string]any{"name": fmt.Sprintf("app-%04d", i), "namespace": ns},
				"spec":     map[string]any{"message": fmt.Sprint(i)},
			}}
			if shards > 0 {
				u.SetLabels(map[string]string{operator.ShardLabel: shardName(i % shards)})
			}
			got, err := dyn.Resource(benchGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			if created != nil {
				created(got)
			}
		}()
	}
	wg.Wait()
}

// waitDeployed waits until crs BenchApps of ns have the Deployed condition,
// or failed says why they never will. It watches them: a LIST of every CR
// twice a second, as it polled before, cost the API server as much as the
// operator's own requests at 1000 CRs, and the slower side paid it longer.
func waitDeployed(dyn dynamic.Interface, ns string, crs int, failed func() error) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeoutCause(ctx, 30*time.Minute, errors.New("not all Deployed within 30 minutes"))
	defer stop()
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := failed(); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	res := dyn.Resource(benchGVR).Namespace(ns)
	lw := &toolscache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	}
	deployed := map[string]bool{}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(e watch.Event) (bool, error) {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		if e.Type != watch.Deleted && conditionTrue(u, "Deployed") {
			deployed[u.GetName()] = true
		} else {
			delete(deployed, u.GetName())
		}
		return len(deployed) == crs, nil
	})
	if err != nil && context.Cause(ctx) != nil {
		return context.Cause(ctx)
	}
	return err
}

// saveHeapProfile writes the operator's heap profile, after a collection, to
// file (read it with go tool pprof).
func saveHeapProfile(b *testing.B, port int, file string) {
	b.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", port))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("heap profile: %s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("heap profile: %s", file)
}

// waitAvailable waits until every Deployment of the namespace has all its
// replicas available.
func waitAvailable(b *testing.B, dyn dynamic.Interface, ns string, want int) {
	b.Helper()
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// Each look is a LIST of every Deployment, so it comes every 5 s, not
	// every second: at 5000 CRs each reads 5000 objects while the cluster
	// is still at work. kube-controller-manager, at its client's rate limit, brought fewer
	// than 2 Deployments a second to available at 5000 CRs on 2 cores (at
	// 0.4 s each the wait ran out), so the limit grows with the fleet.
	limit := max(10*time.Minute, time.Duration(want)*700*time.Millisecond)
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Second, limit, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(deployments).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < want {
			return false, nil
		}
		for _, d := range list.Items {
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
			if available < replicas {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatalf("the Deployments of %s never all became available", ns)
	}
}

// waitRecordedHealthy waits until chartpilot has recorded every release's
// revision healthy, which it does once, at the revision's health deadline
// (5 minutes after it is deployed, by default): a write of its record and
// an event. Until then the operator is not idle; at 1000 CRs deployed over
// minutes, that minute would count the deadlines of the CRs deployed last.
// healthDeadline is the watch's health deadline: the default, or
// CHARTPILOT_BENCH_HEALTH_DEADLINE (a duration) to shorten each measure's
// wait for it.
func healthDeadline() time.Duration {
	if v := os.Getenv("CHARTPILOT_BENCH_HEALTH_DEADLINE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return watches.DefaultHealthDeadline
}

// watchEntry is the watches file of the bench's kind, with extra fields.
func watchEntry(chart, extra string) string {
	return fmt.Sprintf("- group: bench.example.com\n  version: v1\n  kind: BenchApp\n  chart: %s\n  healthDeadline: %s\n%s", chart, healthDeadline(), extra)
}

func waitRecordedHealthy(b *testing.B, dyn dynamic.Interface, ns string, crs int) {
	b.Helper()
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	sel := labels.Set{"owner": "helm", "status": "deployed", release.HealthLabel: release.HealthHealthy}.String()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Second, healthDeadline()+15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(secrets).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(list.Items) >= crs, nil
	})
	if err != nil {
		b.Fatalf("the releases of %s were never all recorded healthy", ns)
	}
}

// waitQuiet waits until the operator has sent no request for 10 s (at most
// 3 minutes).
func waitQuiet(b *testing.B, metricsPort int) {
	b.Helper()
	last, since := requests(b, metricsPort), time.Now()
	for began := time.Now(); time.Since(began) < 3*time.Minute && time.Since(since) < 10*time.Second; time.Sleep(time.Second) {
		if n := requests(b, metricsPort); n != last {
			last, since = n, time.Now()
		}
	}
}

// memoryMiB reads a process's resident memory, its peak and the anonymous
// part of it, in MiB.
func memoryMiB(b *testing.B, pid int) (rss, peak, anon float64) {
	b.Helper()
	r, p, err := process.Memory(pid)
	if err != nil {
		b.Fatal(err)
	}
	return float64(r) / (1 << 20), float64(p) / (1 << 20), rssAnonMiB(b, pid)
}

// rssAnonMiB reads the anonymous part of a process's resident memory.
func rssAnonMiB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no RssAnon in /proc/%d/status", pid)
	return 0
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// cpuSeconds is the user and system CPU time of a process.
func cpuSeconds(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// requests sums client-go's rest_client_requests_total from the operator's metrics.
// metricsSize is the size of one scrape of the metrics endpoint, in
// Prometheus's text format.
func metricsSize(b *testing.B, port int) int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return int(n)
}

// verbs reads operator.RequestsMetric by verb.
func verbs(b *testing.B, port int) map[string]float64 {
	out := map[string]float64{}
	scrape(b, port, func(line string) {
		rest, ok := strings.CutPrefix(line, operator.RequestsMetric+`{verb="`)
		if !ok {
			return
		}
		v, value, _ := strings.Cut(rest, `"} `)
		if n, err := strconv.ParseFloat(value, 64); err == nil {
			out[v] += n
		}
	})
	return out
}

// scrape hands each line of the operator's metrics to line.
func scrape(b *testing.B, port int, line func(string)) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line(sc.Text())
	}
}

func requests(b *testing.B, port int) float64 {
	return metricTotal(b, port, "rest_client_requests_total")
}

// metricTotal sums the samples of a metric (a counter, or a histogram's
// _sum or _count) over its labels, from the operator's metrics.
func metricTotal(b *testing.B, port int, name string) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

// kubectlPath is found once per benchmark binary.
var (
	kubectlOnce sync.Once
	kubectlPath string
)

func kubectl(b *testing.B, c *cluster.Cluster, args ...string) {
	b.Helper()
	kubectlOnce.Do(func() {
		inst, err := toolchain.Ensure(context.Background(), toolchain.Options{Only: []string{"kubectl"}})
		if err != nil {
			b.Fatal(err)
		}
		kubectlPath = inst.Binary("kubectl")
	})
	cmd := exec.Command(kubectlPath, append([]string{"--kubeconfig", c.KubeconfigPath()}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

func writeFile(b *testing.B, dir, name, content string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sizes are the CR counts to measure: CHARTPILOT_BENCH_CRS (comma-separated)
// or 200 and 1000.
func sizes(b *testing.B) []int {
	v := os.Getenv("CHARTPILOT_BENCH_CRS")
	if v == "" {
		return []int{200, 1000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("CHARTPILOT_BENCH_CRS: %q is not a count", f)
		}
		out = append(out, n)
	}
	return out
}
