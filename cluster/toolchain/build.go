package toolchain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// buildPlan says how the binaries are built and where they go.
type buildPlan struct {
	// version is the version a binary is built at.
	version func(Binary) string
	// dest is a binary's cache entry.
	dest func(Binary) string
	// binDir gets a link to each binary under its name.
	binDir string
	// tmpRoot holds each go build's output directory: on the cache's file
	// system, so that moving a binary into its entry is a rename.
	tmpRoot string
}

// buildAll builds bins in groups (see groupBinaries), one go build at a
// time, installs each binary in its cache entry and links it into binDir.
// One at a time: a go build of a group keeps two cores busy through all but
// its last seconds, and two go builds at once compile the packages they
// share twice, before either has cached them (measured cold on 2 cores:
// 7m48s and 15.0 CPU-minutes one at a time, 8m15s and 16.2 two at a time).
func (b builder) buildAll(ctx context.Context, bins []Binary, plan buildPlan) error {
	if len(bins) == 0 {
		return nil
	}
	groups := groupBinaries(bins)
	fmt.Fprintf(b.out, "building %d local cluster components from their Go modules into %s, in %d go builds (a cold build takes about 8 minutes on 2 cores)\n",
		len(bins), plan.binDir, len(groups))
	start := time.Now()
	var cpu time.Duration
	left := len(bins)
	for i, g := range groups {
		left -= len(g.bins)
		p := Progress{Build: i + 1, Builds: len(groups), Group: g.String(), Building: g.names(), Left: left}
		b.progress(p)
		used, err := b.buildGroup(ctx, p, g, plan)
		cpu += used
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(b.out, "built %d components in %s (%s of CPU)\n", len(bins), time.Since(start).Round(time.Second), cpu.Round(time.Second))
	return nil
}

// buildGroup builds a group's binaries with one go build into a directory of
// its own, then moves each into its cache entry: an interrupted build never
// leaves a truncated binary where a later run would trust it. It returns
// the CPU time the build took.
func (b builder) buildGroup(ctx context.Context, p Progress, g *group, plan buildPlan) (time.Duration, error) {
	label := fmt.Sprintf("[%d/%d]", p.Build, p.Builds)
	if err := os.MkdirAll(plan.tmpRoot, 0o755); err != nil {
		return 0, fmt.Errorf("creating %s: %w", plan.tmpRoot, err)
	}
	dir, err := os.MkdirTemp(plan.tmpRoot, ".build-")
	if err != nil {
		return 0, fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(b.out, "%s building %d components of %s: %s\n", label, len(g.bins), g, strings.Join(g.names(), ", "))
	args := append([]string{"build", "-v"}, g.ldflagArgs(plan.version)...)
	if tags := g.buildTags(); len(tags) > 0 {
		args = append(args, "-tags="+strings.Join(tags, ","))
	}
	if err := b.overlay(ctx, g); err != nil {
		return 0, err
	}
	args = append(args, "-o", dir+string(filepath.Separator))
	args = append(args, g.packages()...)
	start := time.Now()
	cpu, err := b.runGo(ctx, label+" "+g.tools, g, args, p)
	if err != nil {
		return cpu, b.groupError(ctx, g, dir, err)
	}
	for _, bin := range g.bins {
		if err := install(filepath.Join(dir, execName(bin.Package)), plan.dest(bin)); err != nil {
			return cpu, err
		}
		if err := link(plan.dest(bin), filepath.Join(plan.binDir, bin.Name)); err != nil {
			return cpu, err
		}
	}
	fmt.Fprintf(b.out, "%s built %d components of %s in %s (%s of CPU)\n", label, len(g.bins), g,
		time.Since(start).Round(time.Second), cpu.Round(time.Second))
	return cpu, nil
}

// groupError says which group failed and which of its binaries were not
// built, with the tail of the go command's output.
func (b builder) groupError(ctx context.Context, g *group, dir string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("building %s: %w", g, ctx.Err())
	}
	var missing []string
	for _, bin := range g.bins {
		if !exists(filepath.Join(dir, execName(bin.Package))) {
			missing = append(missing, fmt.Sprintf("%s (%s)", bin.Name, bin.Package))
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("building %s (%s): %w", g, strings.Join(g.names(), ", "), err)
	}
	return fmt.Errorf("building %s, not built: %s: %w", g, strings.Join(missing, ", "), err)
}

// install moves a built binary into its cache entry.
func install(built, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(dest), err)
	}
	if err := os.Rename(built, dest); err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	return nil
}

// runGo runs the go command for a group in its tools module, reporting every
// heartbeat how many packages it compiled (to Out, and as p to progress),
// and returns the CPU time it and the compilers and linkers it ran took. An
// error carries the last lines of the go command's output.
func (b builder) runGo(ctx context.Context, label string, g *group, args []string, p Progress) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, b.goPath, args...)
	cmd.Dir = filepath.Join(b.src, g.tools)
	cmd.Env = append(b.env(), "CGO_ENABLED="+map[bool]string{false: "0", true: "1"}[g.cgo])
	// Its own process group: a cancelled build stops the compilers and
	// linkers the go command started too, not the go command alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", b.goPath, err)
	}

	// go build -v names each package it compiles: count them for progress and
	// keep the last lines for the error message.
	var compiled atomic.Int64
	tail := newTail(20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, " ") && !strings.HasPrefix(line, "#") {
				compiled.Add(1)
			}
			tail.add(line)
			fmt.Fprintln(b.log, line)
		}
	}()
	start := time.Now()
	ticker := time.NewTicker(b.heartbeat)
	defer ticker.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-ticker.C:
			p.Elapsed, p.Compiled = time.Since(start), int(compiled.Load())
			fmt.Fprintf(b.out, "%s still building: %s, %d packages compiled\n", label, p.Elapsed.Round(time.Second), p.Compiled)
			b.progress(p)
		}
	}
	err = cmd.Wait()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		// wait4 counts the children the go command waited for too.
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return cpu, fmt.Errorf("%w\n%s", err, tail.String())
		}
		return cpu, err
	}
	return cpu, nil
}
