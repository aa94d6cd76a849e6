package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ProvideOptions are ProvideHost's.
type ProvideOptions struct {
	// Out gets what ProvideHost does, a line each.
	Out io.Writer
	// BestEffort: where ProvideHost cannot provide (not Linux, not root,
	// no apt-get) or what it runs fails, it says so and what is missing,
	// and returns nil: a caller that falls back to the kwok node goes on.
	BestEffort bool
	// Host is the host to look at; the zero value is this machine.
	Host Host
	// Run runs a command; nil runs it here, keeping its output for the
	// error.
	Run func(ctx context.Context, name string, args ...string) error
}

// ErrCannotProvide is returned when ProvideHost cannot provide what is
// missing here: not as root, without apt-get, or not on Linux.
var ErrCannotProvide = errors.New("cannot prepare this host")

// ProvideHost installs the Debian packages, loads the kernel modules and
// mounts the cgroup file system that the real node needs and the host
// lacks, saying what it does; with nothing missing it does nothing. It
// needs root and apt-get (Debian's packages only, from the host's
// configured sources). What no package, module or mount provides (another
// Kubernetes's agents, a controller the kernel lacks) it names in the
// error.
func ProvideHost(ctx context.Context, opts ProvideOptions) error {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Run == nil {
		opts.Run = run
	}
	h := opts.Host.defaults()
	err := provide(ctx, h, opts)
	if err != nil && opts.BestEffort {
		fmt.Fprintf(opts.Out, "the real node will not run here, the local cluster uses a kwok node: %v\n", err)
		return nil
	}
	return err
}

func provide(ctx context.Context, h Host, opts ProvideOptions) error {
	needs := h.Missing()
	if len(needs) == 0 {
		fmt.Fprintln(opts.Out, "the host has everything the real node needs: nothing to do")
		return nil
	}
	_, aptErr := h.LookPath("apt-get")
	p := provisions(needs)
	switch {
	case h.GOOS != "linux", h.EUID() != 0:
		return fmt.Errorf("%w: %s", ErrCannotProvide, Explain(needs, aptErr == nil))
	case len(p.packages) > 0 && aptErr != nil:
		return fmt.Errorf("%w: no apt-get: %s", ErrCannotProvide, Explain(needs, false))
	}
	if len(p.packages) > 0 {
		fmt.Fprintf(opts.Out, "installing Debian packages: %s\n", strings.Join(p.packages, " "))
		install := append([]string{"install", "-y", "--no-install-recommends"}, p.packages...)
		if err := opts.Run(ctx, "apt-get", install...); err != nil {
			// A fresh machine's package lists may be missing or stale.
			fmt.Fprintln(opts.Out, "updating the package lists (apt-get update) and trying again")
			if err := opts.Run(ctx, "apt-get", "update"); err != nil {
				return err
			}
			if err := opts.Run(ctx, "apt-get", install...); err != nil {
				return err
			}
		}
	}
	for _, m := range p.modules {
		fmt.Fprintf(opts.Out, "loading kernel module %s\n", m)
		if err := opts.Run(ctx, "modprobe", m); err != nil {
			return err
		}
	}
	if p.mount {
		fmt.Fprintln(opts.Out, "mounting the cgroup file system (cgroup2) on /sys/fs/cgroup")
		if err := opts.Run(ctx, "mount", "-t", "cgroup2", "none", h.path("sys/fs/cgroup")); err != nil {
			return err
		}
	}
	if still := h.Missing(); len(still) > 0 {
		return &UnavailableError{Reason: Explain(still, true)}
	}
	fmt.Fprintln(opts.Out, "the host has everything the real node needs")
	return nil
}

// run runs a command non-interactively; its output goes into the error.
func run(ctx context.Context, name string, args ...string) error {
	cmd, err := systemCommand(ctx, name, args, "DEBIAN_FRONTEND=noninteractive")
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(string(out), 10))
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
