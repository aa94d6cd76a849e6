package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/internal/testbin"
)

// The load's shape, as issue 17 item 6 asks; CHARTPILOT_LOAD_DURATION (a
// Go duration) and CHARTPILOT_LOAD_CLIENTS change it for a run by hand.
const (
	loadClients  = 32
	loadDuration = 30 * time.Second
)

// loadCalls are the calls each client makes in turn: the head of a
// package's channel, every bundle (a stream of the whole catalog), and one
// bundle by name, each cycling through the packages and versions.
var loadCalls = []struct {
	name string
	call func(ctx context.Context, c api.RegistryClient, i int) error
}{
	{"GetBundleForChannel", func(ctx context.Context, c api.RegistryClient, i int) error {
		pkg := fmt.Sprintf("operator-%03d", i%catalogtest.BenchPackages)
		b, err := c.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: "stable"})
		if err == nil && b.CsvName != pkg+".v2.4.0" {
			err = fmt.Errorf("head of %s/stable is %s", pkg, b.CsvName)
		}
		return err
	}},
	{"ListBundles", func(ctx context.Context, c api.RegistryClient, _ int) error {
		s, err := c.ListBundles(ctx, &api.ListBundlesRequest{})
		if err != nil {
			return err
		}
		n := 0
		for {
			if _, err := s.Recv(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return err
			}
			n++
		}
		if n != catalogtest.BenchPackages*catalogtest.BenchBundles {
			return fmt.Errorf("ListBundles streamed %d bundles, want %d", n, catalogtest.BenchPackages*catalogtest.BenchBundles)
		}
		return nil
	}},
	{"GetBundle", func(ctx context.Context, c api.RegistryClient, i int) error {
		pkg, v := fmt.Sprintf("operator-%03d", i%catalogtest.BenchPackages), (i/catalogtest.BenchPackages)%catalogtest.BenchBundles
		csv := fmt.Sprintf("%s.v%d.%d.0", pkg, v/10, v%10)
		b, err := c.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: "stable", CsvName: csv})
		if err == nil && b.CsvName != csv {
			err = fmt.Errorf("GetBundle %s answered %s", csv, b.CsvName)
		}
		return err
	}},
}

// BenchmarkServeUnderLoad serves the generated catalog (200 packages x 25
// inline bundles) with `chartpilot catalog serve` and with `opm serve`, one
// after the other in the same run, each under 32 concurrent clients (a
// gRPC connection each) calling GetBundleForChannel, ListBundles and
// GetBundle in turn for 30 s. It reports per tool and call the p50 and p99
// latency and the errors (any fails the benchmark), and the server's
// resident memory when healthy, over the second half of the load (sampled
// every second), at its end, and at its peak.
// Run it with
//
//	go test -run '^$' -bench ServeUnderLoad -benchtime 1x ./catalog/
func BenchmarkServeUnderLoad(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("reads resident memory from /proc")
	}
	clients, duration := loadClients, loadDuration
	if v, err := strconv.Atoi(os.Getenv("CHARTPILOT_LOAD_CLIENTS")); err == nil {
		clients = v
	}
	if v, err := time.ParseDuration(os.Getenv("CHARTPILOT_LOAD_DURATION")); err == nil {
		duration = v
	}
	dir := catalogtest.BenchCatalog(b)
	tools := []struct {
		name  string
		bin   string
		serve func(dir, port string) []string
	}{
		{"chartpilot", copyBinary(b, testbin.Chartpilot(b)), func(dir, port string) []string { return []string{"catalog", "serve", dir, "--port", port} }},
		{"opm", copyBinary(b, opmBinary(b)), func(dir, port string) []string {
			return []string{"serve", dir, "--port", port, "--pprof-addr", "127.0.0.1:0", "--termination-log", os.DevNull}
		}},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d clients for %s each, %d packages x %d bundles\n", clients, duration, catalogtest.BenchPackages, catalogtest.BenchBundles)
	fmt.Fprintf(&table, "%-10s | %-19s | %7s | %9s | %9s | %6s\n", "tool", "call", "calls", "p50", "p99", "errors")
	var mem strings.Builder
	for _, tool := range tools {
		b.Run(tool.name, func(b *testing.B) {
			for b.Loop() {
				stop, conn, pid := startServeProcess(b, tool.bin, tool.serve, dir)
				start := residentKiB(b, pid)
				samples := sampleResident(pid, time.Second)
				res := runLoad(b, conn.Target(), clients, duration)
				rss := samples()
				end := residentKiB(b, pid)
				peak := stop()
				// Stable: the second half of the load holds what the first reached.
				half := rss[len(rss)/2:]
				lo, hi := slices.Min(half), slices.Max(half)
				for i, c := range loadCalls {
					r := res[i]
					fmt.Fprintf(&table, "%-10s | %-19s | %7d | %9s | %9s | %6d\n", tool.name, c.name, len(r.latencies), roundLatency(r.quantile(0.5)), roundLatency(r.quantile(0.99)), r.errors)
					b.ReportMetric(float64(r.quantile(0.5).Microseconds())/1000, c.name+"-p50-ms")
					b.ReportMetric(float64(r.quantile(0.99).Microseconds())/1000, c.name+"-p99-ms")
					if r.errors > 0 {
						b.Errorf("%s: %d of %d %s calls failed, the first: %v", tool.name, r.errors, len(r.latencies)+r.errors, c.name, r.firstErr)
					}
				}
				fmt.Fprintf(&mem, "%-10s | RSS when healthy %4d MiB | second half of the load %4d-%4d MiB | at the end %4d MiB | peak %4d MiB\n", tool.name, start>>10, lo>>10, hi>>10, end>>10, peak>>10)
				b.ReportMetric(float64(start)/(1<<10), "rss-start-MiB")
				b.ReportMetric(float64(end)/(1<<10), "rss-end-MiB")
				b.ReportMetric(float64(peak)/(1<<10), "peak-MiB")
			}
		})
	}
	b.Logf("\n%s%s", table.String(), mem.String())
}

// roundLatency keeps three significant digits or so.
func roundLatency(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// callResult gathers one kind of call's outcomes across the clients.
type callResult struct {
	latencies []time.Duration
	errors    int
	firstErr  error
}

func (r *callResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[int(q*float64(len(r.latencies)-1))]
}

// runLoad runs clients clients against the server at target for d, each on
// its own connection making loadCalls in turn, and returns the outcomes per
// call, latencies sorted.
func runLoad(b *testing.B, target string, clients int, d time.Duration) []callResult {
	b.Helper()
	var (
		mu  sync.Mutex
		out = make([]callResult, len(loadCalls))
		wg  sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(b.Context(), d)
	defer cancel()
	for n := range clients {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := api.NewRegistryClient(conn)
		wg.Go(func() {
			mine := make([]callResult, len(loadCalls))
			// Clients start at different places of the cycle.
			for i := n; ctx.Err() == nil; i++ {
				k := i % len(loadCalls)
				// A call cut off by the end of the load is not an error;
				// a call still running then is allowed to finish.
				t0 := time.Now()
				err := loadCalls[k].call(context.WithoutCancel(ctx), client, i*7+n)
				took := time.Since(t0)
				if err != nil {
					mine[k].errors++
					if mine[k].firstErr == nil {
						mine[k].firstErr = err
					}
					continue
				}
				mine[k].latencies = append(mine[k].latencies, took)
			}
			mu.Lock()
			defer mu.Unlock()
			for k := range out {
				out[k].latencies = append(out[k].latencies, mine[k].latencies...)
				out[k].errors += mine[k].errors
				if out[k].firstErr == nil {
					out[k].firstErr = mine[k].firstErr
				}
			}
		})
	}
	wg.Wait()
	for k := range out {
		slices.Sort(out[k].latencies)
	}
	return out
}

// sampleResident reads the process's resident memory every interval until
// the returned function is called, which returns the samples (at least one).
func sampleResident(pid int, interval time.Duration) func() []int64 {
	var (
		mu      sync.Mutex
		samples []int64
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if kib, err := readResident(pid); err == nil {
				mu.Lock()
				samples = append(samples, kib)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// residentKiB is the process's resident memory (VmRSS) in KiB.
func residentKiB(b *testing.B, pid int) int64 {
	b.Helper()
	kib, err := readResident(pid)
	if err != nil {
		b.Fatal(err)
	}
	return kib
}

// readResident reads VmRSS from /proc/PID/status, in KiB.
func readResident(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS of %d: %w", pid, err)
			}
			return kib, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
