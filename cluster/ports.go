package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/chartpilot/chartpilot/internal/flock"
)

// portPicker picks free ports for a cluster's components and holds a
// machine-wide lock on each until release. Between the pick and the moment a
// component binds (seconds, for the last component of a cluster) the port is
// free to anyone; another chartpilot cluster starting at the same time on this
// machine took it so once. The locks keep every chartpilot cluster away from
// the ports another one is starting on.
type portPicker struct {
	low, high int
	// dir holds one lock file per port; empty reserves nothing.
	dir     string
	unlocks []func()
}

// newPortPicker picks outside the kernel's ephemeral range: a port from that
// range (what listening on :0 gives) can be taken by any outgoing connection
// between the pick and the component's start, and is, under load.
func newPortPicker() *portPicker {
	low, high := portRange()
	p := &portPicker{low: low, high: high}
	dir := filepath.Join(os.TempDir(), "chartpilot-ports")
	// Sticky and writable by all, as /tmp is: users share the machine's
	// ports. MkdirAll's mode passes the umask and drops the sticky bit;
	// Chmod fails, harmlessly, on another user's directory.
	if err := os.MkdirAll(dir, 0o777); err == nil {
		_ = os.Chmod(dir, os.ModeSticky|0o777)
		p.dir = dir
	}
	return p
}

// pick returns a port that is free now and that no other picker holds.
func (p *portPicker) pick() (int, error) {
	for range 200 {
		port := p.low + rand.IntN(p.high-p.low+1)
		unlock, ok := p.reserve(port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", loopback(port))
		if err != nil {
			unlock()
			continue
		}
		l.Close()
		p.unlocks = append(p.unlocks, unlock)
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d", p.low, p.high)
}

// reserve takes the port's lock. A lock file this user cannot open (another
// user's) reserves nothing but does not refuse the port: the listen check
// and the start-time check still guard it.
func (p *portPicker) reserve(port int) (unlock func(), ok bool) {
	if p.dir == "" {
		return func() {}, true
	}
	unlock, err := flock.TryLock(filepath.Join(p.dir, strconv.Itoa(port)))
	switch {
	case errors.Is(err, flock.ErrLocked):
		return nil, false
	case err != nil:
		return func() {}, true
	}
	return unlock, true
}

// FreePort picks a port as Up picks its components' ports: free now and
// outside the kernel's ephemeral range. It is for a port a caller must know
// before Up (Options.Ports), as the demo knows the registry's address while
// the components build. Nothing holds it until Up, which fails naming the
// port if another process took it meanwhile.
func FreePort() (int, error) {
	p := newPortPicker()
	defer p.release()
	return p.pick()
}

// release lets other pickers have the ports; call it once the components
// listen on them.
func (p *portPicker) release() {
	for _, unlock := range p.unlocks {
		unlock()
	}
	p.unlocks = nil
}

// portRange is the span to pick listening ports from: below the ephemeral
// range when there is room, else above it.
func portRange() (low, high int) {
	ephLow, ephHigh := 32768, 60999
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if l, err := strconv.Atoi(f[0]); err == nil {
				ephLow = l
			}
			if h, err := strconv.Atoi(f[1]); err == nil {
				ephHigh = h
			}
		}
	}
	if ephLow > 12000 {
		return 10000, ephLow - 1
	}
	return ephHigh + 1, 65535
}

// PortInUseError says that a component's port is taken by another process.
type PortInUseError struct {
	Component string
	Addr      string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("%s cannot start: %s is already in use by another process", e.Component, e.Addr)
}

func checkPortFree(component, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return &PortInUseError{Component: component, Addr: addr}
		}
		return fmt.Errorf("%s cannot listen on %s: %w", component, addr, err)
	}
	return l.Close()
}
