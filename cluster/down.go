package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/chartpilot/chartpilot/cluster/process"
)

// DownOptions configure Down.
type DownOptions struct {
	// Wipe deletes the cluster's state (etcd data, certificates, logs,
	// kubeconfigs) and its volumes' directories (HostPathDir) once every
	// component is stopped; the next Up starts afresh.
	Wipe bool
}

// stateEntries are what a cluster writes in its state directory; Wipe removes
// these and nothing else, so a state directory pointed at the wrong place
// never takes other files with it.
var stateEntries = []string{"etcd", "pki", "logs", "run", "kubeconfigs", "kubeconfig", "node", "registry", ObjectStoreName, volumesRecord, csiStateDir, "olmv1", "cluster.json", "lock"}

// Down stops every component, in reverse start order, with its process group.
// It returns ErrNotRunning when nothing was running (and nothing was wiped).
func (c *Cluster) Down(ctx context.Context, opts DownOptions) error {
	began := time.Now()
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	// The volumes' directories are outside the state directory: the API
	// server, while it runs, says which are this cluster's.
	volumes, err := c.volumeDirs(ctx)
	if err != nil {
		fmt.Fprintf(c.opts.Out, "  %-24s not known, left in %s: %v\n", "volumes", HostPathDir, err)
	}
	names := ComponentNames()
	slices.Reverse(names)
	stopped := 0
	var errs []error
	for _, name := range names {
		if ctx.Err() != nil {
			unlock()
			return ctx.Err()
		}
		err := process.Stop(c.pidFile(name), c.opts.StopTimeout)
		switch {
		case errors.Is(err, process.ErrNotRunning):
		case err != nil:
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		default:
			stopped++
			fmt.Fprintf(c.opts.Out, "  %-24s stopped\n", name)
		}
		if name == Containerd {
			c.stopPods()
		}
	}
	if c.state.Node == NodeReal {
		if err := c.cleanupNode(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	unlock()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	wiped := false
	if opts.Wipe {
		if err := removeVolumes(volumes); err != nil {
			return err
		}
		var err error
		if wiped, err = c.wipe(); err != nil {
			return err
		}
	}
	if stopped == 0 && !wiped {
		return fmt.Errorf("%w in %s", ErrNotRunning, c.opts.StateDir)
	}
	fmt.Fprintf(c.opts.Out, "local cluster stopped in %s", time.Since(began).Round(10*time.Millisecond))
	if wiped {
		fmt.Fprintf(c.opts.Out, "; state in %s removed", c.opts.StateDir)
	}
	fmt.Fprintln(c.opts.Out)
	return nil
}

func (c *Cluster) wipe() (bool, error) {
	found := false
	for _, e := range stateEntries {
		p := c.path(e)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		found = true
		if err := os.RemoveAll(p); err != nil {
			return found, fmt.Errorf("removing %s: %w", p, err)
		}
	}
	_ = os.Remove(c.opts.StateDir) // only if now empty
	c.state = state{}
	return found, nil
}
