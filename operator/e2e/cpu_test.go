package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
)

// clusterCPU is the CPU time the local cluster's components spent, by
// component: what a measure costs the machine beyond the operator's own.
type clusterCPU map[string]float64

// takeClusterCPU reads the CPU time of each running component of c.
func takeClusterCPU(b *testing.B, c *cluster.Cluster) clusterCPU {
	b.Helper()
	out := clusterCPU{}
	for _, st := range c.Status(context.Background()) {
		if st.Running {
			out[st.Name] = cpuSeconds(b, st.PID)
		}
	}
	return out
}

// since is the CPU each component spent since before, and in all.
func (now clusterCPU) since(before clusterCPU) (float64, string) {
	names := make([]string, 0, len(now))
	for n := range now {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0.0
	var parts []string
	for _, n := range names {
		d := now[n] - before[n]
		total += d
		parts = append(parts, fmt.Sprintf("%s %.1f", n, d))
	}
	return total, strings.Join(parts, ", ")
}

// cpuProfiles takes the operator's CPU profile in 5-second pieces (Go's
// profile endpoint takes a fixed duration) until the returned stop is
// called, into files named prefix-N.cpu.pb.gz; `go tool pprof` merges the
// pieces given together.
func cpuProfiles(b *testing.B, port int, prefix string) (stop func()) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		b.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for n := 0; ; {
			select {
			case <-done:
				return
			default:
			}
			// The operator is starting: its endpoint may not listen yet.
			if err := cpuProfile(port, fmt.Sprintf("%s-%d.cpu.pb.gz", prefix, n)); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			n++
		}
	}()
	return func() {
		close(done)
		<-finished
		b.Logf("CPU profiles: %s-*.cpu.pb.gz", prefix)
	}
}

func cpuProfile(port int, file string) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=5", port))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// throttled counts the lines of an operator's log in which client-go says it
// waited for its own rate limit (it logs waits over a second).
func throttled(logFile string) int {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "client-side throttling")
}
