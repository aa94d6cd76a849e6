package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster/process"
)

func shardName(i int) string { return fmt.Sprintf("s%d", i) }

// BenchmarkShards runs the CRs through one operator, then through two
// operators of different shards (run --shard) that split them by label:
// the time to all Deployed and the memory of each process.
func BenchmarkShards(b *testing.B) {
	env := setupBench(b)
	for _, crs := range sizes(b) {
		for _, shards := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dshards/%dCRs", shards, crs), func(b *testing.B) {
				for range b.N {
					deploy, rss := measureShards(b, env, crs, shards)
					b.ReportMetric(deploy.Seconds(), "s-to-deployed")
					b.ReportMetric(float64(crs)/deploy.Seconds(), "CRs/s")
					b.ReportMetric(sum(rss), "MiB-rss-total")
					b.ReportMetric(rss[0], "MiB-rss-per-process")
				}
			})
		}
	}
}

// measureShards starts one operator per shard (a single one takes the CRs
// without a shard label), creates crs CRs spread over the shards and waits
// until all are Deployed. It returns that time and each process's RSS.
func measureShards(b *testing.B, env *benchEnv, crs, shards int) (time.Duration, []float64) {
	ns := fmt.Sprintf("shards%d-%d-%d", shards, crs, time.Now().Unix()%100000)
	kubectl(b, env.cluster, "create", "namespace", ns)
	defer drain(b, env.cluster, env.dyn, ns)

	var daemons []*process.Daemon
	var logs []string
	for i := range shards {
		logFile := filepath.Join(b.TempDir(), fmt.Sprintf("shard-%d.log", i))
		args := []string{"run", "--watches-file", env.watches, "--kubeconfig", env.cluster.KubeconfigPath(), "--max-concurrent-reconciles", "4",
			"--reconcile-period", "20s", "--metrics-bind-address", "0", "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", freePort(b))}
		if shards > 1 {
			args = append(args, "--shard", shardName(i))
		}
		d, err := process.Start(process.Spec{
			Name: fmt.Sprintf("shard-%d", i), Path: env.chartpilot, Args: args,
			Env:     []string{"KUBECONFIG=" + env.cluster.KubeconfigPath(), "WATCH_NAMESPACE=" + ns},
			Dir:     filepath.Dir(env.watches),
			LogFile: logFile, PIDFile: logFile + ".pid",
		})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = process.Stop(logFile+".pid", 10*time.Second) }()
		daemons, logs = append(daemons, d), append(logs, logFile)
	}

	b.ResetTimer()
	began := time.Now()
	labelled := 0
	if shards > 1 {
		labelled = shards
	}
	createCRs(b, env.dyn, ns, crs, labelled, nil)
	err := waitDeployed(env.dyn, ns, crs, func() error {
		for i, d := range daemons {
			select {
			case <-d.Exited():
				return fmt.Errorf("shard %d exited: %s", i, process.LogTail(logs[i], 10))
			default:
			}
		}
		return nil
	})
	deploy := time.Since(began)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%d shards: not all CRs Deployed: %v", shards, err)
	}
	var rss []float64
	var each []string
	for _, d := range daemons {
		r, _, err := process.Memory(d.PID())
		if err != nil {
			b.Fatal(err)
		}
		rss = append(rss, float64(r)/(1<<20))
		each = append(each, fmt.Sprintf("%.0f", rss[len(rss)-1]))
	}
	b.Logf("%d shard(s), %d CRs: deployed in %s (%.1f CRs/s); RSS %.0f MiB in all (%s MiB per process)",
		shards, crs, deploy.Round(100*time.Millisecond), float64(crs)/deploy.Seconds(), sum(rss), strings.Join(each, ", "))
	return deploy, rss
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}
