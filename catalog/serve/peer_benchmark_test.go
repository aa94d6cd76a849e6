package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/internal/testbin"
)

// copyBinary copies bin into a new file, with plain reads and writes, and
// returns its path. Each tool's binary runs from such a copy so that both
// start from the same page-cache state: a binary the Go linker has just
// written (it writes through mmap) runs with about 30 MiB more of its file
// resident than a copy of the same bytes, which a peak-memory comparison
// with a binary built earlier would count against it.
func copyBinary(b *testing.B, bin string) string {
	b.Helper()
	in, err := os.Open(bin)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(b.TempDir(), filepath.Base(bin))
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// peerCommands are the same operations as each tool spells them.
type peerTool struct {
	name     string
	bin      string
	render   func(dir string) []string
	validate func(dir string) []string
	serve    func(dir, port string) []string
}

// BenchmarkSideBySide runs chartpilot's and opm's binaries as processes on
// the same generated catalog (200 packages x 25 inline bundles), in the same
// run: render, validate, serve start to healthy, ListBundles and
// GetBundleForChannel, with each process's peak resident memory. Run it with
//
//	go test -run '^$' -bench SideBySide -benchtime 5x ./catalog/
func BenchmarkSideBySide(b *testing.B) {
	dir := catalogtest.BenchCatalog(b)
	tools := []peerTool{{
		name:     "chartpilot",
		bin:      copyBinary(b, testbin.Chartpilot(b)),
		render:   func(dir string) []string { return []string{"catalog", "render", "--dir", dir, "-o", "yaml"} },
		validate: func(dir string) []string { return []string{"catalog", "validate", "--dir", dir} },
		serve:    func(dir, port string) []string { return []string{"catalog", "serve", dir, "--port", port} },
	}, {
		name:     "opm",
		bin:      copyBinary(b, opmBinary(b)),
		render:   func(dir string) []string { return []string{"render", dir, "-o", "yaml"} },
		validate: func(dir string) []string { return []string{"validate", dir} },
		serve: func(dir, port string) []string {
			return []string{"serve", dir, "--port", port, "--pprof-addr", "127.0.0.1:0", "--termination-log", os.DevNull}
		},
	}}
	// Each operation runs for both tools back to back, so that the load of
	// a shared machine changes as little as possible between the two.
	ops := []struct {
		name string
		run  func(b *testing.B, tool peerTool)
	}{
		{"render", func(b *testing.B, tool peerTool) { benchProcess(b, tool.bin, tool.render(dir)) }},
		{"validate", func(b *testing.B, tool peerTool) { benchProcess(b, tool.bin, tool.validate(dir)) }},
		{"serve-start-to-healthy", func(b *testing.B, tool peerTool) {
			var peak int64
			for b.Loop() {
				stop, _, _ := startServeProcess(b, tool.bin, tool.serve, dir)
				peak = max(peak, stop())
			}
			b.ReportMetric(float64(peak)/(1<<10), "peak-MiB")
		}},
		{"ListBundles", func(b *testing.B, tool peerTool) {
			b.StopTimer()
			stop, conn, _ := startServeProcess(b, tool.bin, tool.serve, dir)
			defer stop()
			client := api.NewRegistryClient(conn)
			b.StartTimer()
			for b.Loop() {
				s, err := client.ListBundles(b.Context(), &api.ListBundlesRequest{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					if _, err := s.Recv(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != catalogtest.BenchPackages*catalogtest.BenchBundles {
					b.Fatalf("%d bundles", n)
				}
			}
		}},
		{"GetBundleForChannel", func(b *testing.B, tool peerTool) {
			b.StopTimer()
			stop, conn, _ := startServeProcess(b, tool.bin, tool.serve, dir)
			defer stop()
			b.StartTimer()
			benchGetBundleForChannel(b, api.NewRegistryClient(conn))
		}},
		// The floor of a call: a health check, the smallest request and
		// answer, over the same connection to the same process.
		{"health-check", func(b *testing.B, tool peerTool) {
			b.StopTimer()
			stop, conn, _ := startServeProcess(b, tool.bin, tool.serve, dir)
			defer stop()
			client := health.NewHealthClient(conn)
			b.StartTimer()
			for b.Loop() {
				for range callsPerIteration {
					if _, err := client.Check(b.Context(), &health.HealthCheckRequest{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*callsPerIteration), "ns/call")
		}},
	}
	for _, op := range ops {
		for _, tool := range tools {
			b.Run(tool.name+"/"+op.name, func(b *testing.B) { op.run(b, tool) })
		}
	}
}

// callsPerIteration is how many GetBundleForChannel calls one benchmark
// iteration makes: one call is well under a millisecond, so a few
// iterations of single calls would measure noise.
const callsPerIteration = 200

// benchGetBundleForChannel asks for the head of a stable channel
// callsPerIteration times per iteration, cycling through the packages,
// and reports the time per call.
func benchGetBundleForChannel(b *testing.B, client api.RegistryClient) {
	i := 0
	for b.Loop() {
		for range callsPerIteration {
			pkg := fmt.Sprintf("operator-%03d", i%catalogtest.BenchPackages)
			i++
			bundle, err := client.GetBundleForChannel(b.Context(), &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: "stable"})
			if err != nil {
				b.Fatal(err)
			}
			if bundle.CsvName != pkg+".v2.4.0" {
				b.Fatalf("head %s", bundle.CsvName)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*callsPerIteration), "ns/call")
}

// benchProcess runs bin args to completion per iteration, reporting the
// peak resident memory of the runs.
func benchProcess(b *testing.B, bin string, args []string) {
	var peak int64
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &errOut
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v\n%s", bin, args, err, errOut.String())
		}
		peak = max(peak, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	b.ReportMetric(float64(peak)/(1<<10), "peak-MiB")
}

// startServeProcess starts a registry server process and waits until its
// health check answers SERVING; stop kills it and returns its peak resident
// memory in KiB. pid is the process's.
func startServeProcess(b *testing.B, bin string, args func(dir, port string) []string, dir string) (stop func() int64, conn *grpc.ClientConn, pid int) {
	b.Helper()
	port := freePort(b)
	cmd := exec.Command(bin, args(dir, port)...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// A connection attempt that fails while the server starts backs off
	// for a second and more by default: retry every 10ms instead, or a
	// server healthy sooner would be measured at the end of that backoff.
	conn, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond}, MinConnectTimeout: time.Second}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	for {
		resp, err := health.NewHealthClient(conn).Check(ctx, &health.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err == nil && resp.Status == health.HealthCheckResponse_SERVING {
			break
		}
		if ctx.Err() != nil {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("%s not healthy: %v\n%s", bin, err, errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	var peak int64
	stop = func() int64 {
		if !stopped {
			stopped = true
			conn.Close()
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			peak = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
		}
		return peak
	}
	return stop, conn, cmd.Process.Pid
}
