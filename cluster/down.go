package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
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
// never takes other files with it. The state file comes last: a wipe that
// stops half way can be run again.
var stateEntries = []string{"etcd", "pki", "logs", "run", "kubeconfigs", "kubeconfig", "node", "registry", ObjectStoreName, volumesRecord, csiStateDir, "olmv1", stateFile, "lock"}

// NotStateDirError means Down was asked to wipe a directory that is no
// cluster's state directory: Up never wrote its state file there, or not
// as this user. Nothing in it is touched.
type NotStateDirError struct {
	// Dir is the directory, Reason why it is not a cluster's.
	Dir, Reason string
}

func (e *NotStateDirError) Error() string {
	return fmt.Sprintf("not wiping %s: it is not a local cluster's state directory (%s)", e.Dir, e.Reason)
}

// checkStateDir says whether dir is a cluster's state directory, as its
// state file, which Up writes before anything else there, shows: a regular
// file (not a symlink) of this user's. Generic names (run, logs, pki) are
// wiped only there: --state-dir / would otherwise take /run with it, and
// --state-dir /tmp what another user left under those names.
func checkStateDir(dir string) error {
	fi, err := os.Lstat(filepath.Join(dir, stateFile))
	switch {
	case err != nil:
		return &NotStateDirError{Dir: dir, Reason: fmt.Sprintf("`cluster up` wrote no %s there", stateFile)}
	case !fi.Mode().IsRegular():
		return &NotStateDirError{Dir: dir, Reason: fmt.Sprintf("its %s is not a regular file", stateFile)}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &NotStateDirError{Dir: dir, Reason: fmt.Sprintf("its %s belongs to uid %d, not to this user", stateFile, st.Uid)}
	}
	return nil
}

// Down stops every component, in reverse start order, with its process group.
// It returns ErrNotRunning when nothing was running (and nothing was wiped).
func (c *Cluster) Down(ctx context.Context, opts DownOptions) error {
	began := time.Now()
	if opts.Wipe {
		if err := checkStateDir(c.opts.StateDir); err != nil {
			if !c.holdsStateEntries() {
				// Nothing of a cluster's there (a new or missing
				// directory): nothing to stop, nothing to wipe.
				return fmt.Errorf("%w in %s", ErrNotRunning, c.opts.StateDir)
			}
			return err
		}
	}
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

// holdsStateEntries says whether the state directory holds any name a
// cluster writes there.
func (c *Cluster) holdsStateEntries() bool {
	for _, e := range stateEntries {
		if _, err := os.Lstat(c.path(e)); err == nil {
			return true
		}
	}
	return false
}

// wipe removes the state entries, within the state directory only: a
// symlink among them is removed, never followed.
func (c *Cluster) wipe() (bool, error) {
	root, err := os.OpenRoot(c.opts.StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer root.Close()
	found := false
	for _, e := range stateEntries {
		if _, err := root.Lstat(e); err != nil {
			continue
		}
		found = true
		if err := root.RemoveAll(e); err != nil {
			return found, fmt.Errorf("removing %s: %w", c.path(e), err)
		}
	}
	_ = os.Remove(c.opts.StateDir) // only if now empty
	c.state = state{}
	return found, nil
}
