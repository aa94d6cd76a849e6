package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/pki"
	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// Up builds whatever component is missing, starts every component that is not
// already running, installs OLM's CRDs and namespaces, registers a kwok node
// and returns once all of it is healthy. Running it again is harmless.
//
// When Up fails, it stops the components it started itself, last first, and
// on a real node undoes its setup of the host once no component of the
// cluster runs; the components that were running before are left alone, for
// Down. The error is the one that made Up fail.
func (c *Cluster) Up(ctx context.Context) error {
	start := time.Now()
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	// The state file first, before anything else lands in the directory:
	// it is what lets Down wipe it, also after an Up that failed early.
	if _, err := os.Lstat(c.path(stateFile)); errors.Is(err, fs.ErrNotExist) {
		if err := c.saveState(); err != nil {
			return err
		}
	}

	if err := c.checkNodeKind(); err != nil {
		return err
	}
	if err := c.settleOLM(); err != nil {
		return err
	}
	var s startup
	if err := c.up(ctx, &s); err != nil {
		return c.rollback(&s, err)
	}
	fmt.Fprintf(c.opts.Out, "local cluster ready in %s; kubeconfig: %s\n", time.Since(start).Round(100*time.Millisecond), c.KubeconfigPath())
	return nil
}

// startup is what one Up did that a failure must undo.
type startup struct {
	// started are the components this Up started, in start order.
	started []string
	// claimed is set once this Up holds the machine's real node.
	claimed bool
	// staleNode is the node directory of a cluster that no longer runs
	// but held the machine's real node until this Up took it over.
	staleNode string
}

func (c *Cluster) up(ctx context.Context, s *startup) error {
	onNode := c.opts.Node == NodeReal
	if onNode {
		stale, err := node.Claim(c.path("node"), nodeRuns)
		if err != nil {
			return err
		}
		s.claimed, s.staleNode = true, stale
	}
	withV1 := !c.opts.WithoutOLM && c.opts.OLM.runsV1()
	inst, err := toolchain.Ensure(ctx, toolchain.Options{CacheDir: c.opts.CacheDir, Out: c.opts.Out, Node: onNode, OLMv1: withV1})
	if err != nil {
		return err
	}
	c.state.BinDir = inst.BinDir
	if s.staleNode != "" {
		c.cleanupStaleNode(s.staleNode)
	}
	// Every component listens on its port by the time Up returns.
	picker := newPortPicker()
	defer picker.release()
	if err := c.resolvePorts(picker); err != nil { // records the options in the state too
		return err
	}
	if onNode {
		// The API server listens on the node's address, which the bridge holds.
		if err := node.Prepare(); err != nil {
			return fmt.Errorf("preparing this host for the real node: %w", err)
		}
	}
	if _, err := pki.Ensure(c.path("pki"), pkiRequest()); err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}

	if err := c.ensureObjectStoreCredentials(); err != nil {
		return fmt.Errorf("generating the object store's credentials: %w", err)
	}
	comps := c.components(inst)
	if err := c.stopUnwanted(comps); err != nil {
		return err
	}
	// Every port of every component to start is checked first, so that a busy
	// port fails Up before anything starts rather than half way.
	for _, comp := range comps {
		if _, running := process.Find(c.pidFile(comp.name)); running {
			continue
		}
		for _, addr := range comp.addrs {
			if err := checkPortFree(comp.name, addr); err != nil {
				return err
			}
		}
	}

	fmt.Fprintf(c.opts.Out, "starting the local cluster in %s\n", c.opts.StateDir)
	for _, comp := range comps {
		if comp.before != nil {
			if err := comp.before(ctx); err != nil {
				return fmt.Errorf("%s: %w", comp.name, err)
			}
		}
		if err := c.ensureRunning(ctx, inst.Binary(comp.name), comp, s); err != nil {
			return err
		}
		if comp.after != nil {
			if err := comp.after(ctx); err != nil {
				return err
			}
		}
	}
	if err := c.waitNodeReady(ctx); err != nil {
		return err
	}
	if onNode {
		return c.installAddons(ctx, inst)
	}
	return nil
}

// rollbackTimeout bounds the undoing of a failed Up beyond the components'
// stop timeouts: the real node's cleanup waits for killed containers.
const rollbackTimeout = time.Minute

// rollback undoes what s records after Up failed with cause, and returns
// cause, joined with whatever could not be undone. It runs even when ctx
// was cancelled (an interrupted Up), so it takes no context from it.
func (c *Cluster) rollback(s *startup, cause error) error {
	began := time.Now()
	var errs []error
	for _, name := range slices.Backward(s.started) {
		err := process.Stop(c.pidFile(name), c.opts.StopTimeout)
		if err != nil && !errors.Is(err, process.ErrNotRunning) {
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		}
	}
	// The host's setup (bridge, rules, mounts, the claim) is the running
	// cluster's while any of its components runs: then Down undoes it.
	cleaned := false
	if s.claimed && len(errs) == 0 && !c.anyRunning() {
		ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		defer cancel()
		if err := c.cleanupNode(ctx); err != nil {
			errs = append(errs, err)
		}
		cleaned = true
	}
	if len(s.started) > 0 || cleaned {
		what := fmt.Sprintf("stopped the %d component(s) it started", len(s.started))
		if cleaned {
			what += " and removed the real node's setup of this host"
		}
		fmt.Fprintf(c.opts.Out, "start failed: %s in %s\n", what, time.Since(began).Round(10*time.Millisecond))
	}
	if len(errs) > 0 {
		return errors.Join(cause, fmt.Errorf("undoing the failed start: %w", errors.Join(errs...)))
	}
	return cause
}

// anyRunning reports whether any component of the cluster runs.
func (c *Cluster) anyRunning() bool {
	for _, name := range ComponentNames() {
		if _, ok := process.Find(c.pidFile(name)); ok {
			return true
		}
	}
	return false
}

// ensureRunning starts comp unless it runs, and waits for it to be healthy;
// s records it once started.
func (c *Cluster) ensureRunning(ctx context.Context, binary string, comp component, s *startup) error {
	if pid, ok := process.Find(c.pidFile(comp.name)); ok {
		if err := c.waitHealthy(ctx, comp, nil); err != nil {
			return fmt.Errorf("%s (pid %d) is running but not healthy: %w; its log: %s", comp.name, pid, err, c.LogFile(comp.name))
		}
		fmt.Fprintf(c.opts.Out, "  %-24s already running (pid %d)\n", comp.name, pid)
		return nil
	}
	if c.opts.BeforeStart != nil {
		c.opts.BeforeStart(comp.name)
	}
	for _, addr := range comp.addrs {
		if err := checkPortFree(comp.name, addr); err != nil {
			return err
		}
	}
	began := time.Now()
	d, err := process.Start(process.Spec{
		Name:    comp.name,
		Path:    binary,
		Args:    comp.args,
		Env:     comp.env,
		Dir:     c.opts.StateDir,
		LogFile: c.LogFile(comp.name),
		PIDFile: c.pidFile(comp.name),
		NetNS:   comp.netns,
	})
	if err != nil {
		return err
	}
	s.started = append(s.started, comp.name)
	if err := c.waitHealthy(ctx, comp, d); err != nil {
		_ = process.Stop(c.pidFile(comp.name), c.opts.StopTimeout)
		return err
	}
	fmt.Fprintf(c.opts.Out, "  %-24s ready in %s (pid %d)\n", comp.name, time.Since(began).Round(10*time.Millisecond), d.PID())
	return nil
}

// StartError says that a component exited or never became healthy; it
// carries the tail of the component's log.
type StartError struct {
	Component string
	Reason    string
	Log       string
	LogTail   string
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("%s %s (log: %s)", e.Component, e.Reason, e.Log)
	if e.LogTail == "" {
		return msg
	}
	return msg + "\n" + indent(e.LogTail, "    ")
}

// waitHealthy polls the component's health until it answers, it exits (when
// d is ours) or the start timeout passes.
func (c *Cluster) waitHealthy(ctx context.Context, comp component, d *process.Daemon) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var exited <-chan struct{}
	if d != nil {
		exited = d.Exited()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = comp.health(ctx); last == nil {
			return nil
		}
		select {
		case <-exited:
			return &StartError{Component: comp.name, Reason: "exited during start (" + d.ExitError().Error() + ")",
				Log: c.LogFile(comp.name), LogTail: process.LogTail(c.LogFile(comp.name), 15)}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return &StartError{Component: comp.name,
				Reason: fmt.Sprintf("did not become healthy within %s: %v", c.opts.StartTimeout, last),
				Log:    c.LogFile(comp.name), LogTail: process.LogTail(c.LogFile(comp.name), 15)}
		case <-tick.C:
		}
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
