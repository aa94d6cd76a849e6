package clustertest

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// PortTrap makes a component of a local cluster fail to start: armed, it
// takes the component's port as Up is about to start it, past Up's check
// of every port, as another process of the host could. Pass its
// BeforeStart as cluster.Options.BeforeStart.
type PortTrap struct {
	t         testing.TB
	component string
	mu        sync.Mutex
	port      func() int // nil: disarmed
	l         net.Listener
	took      time.Time
}

// NewPortTrap returns a disarmed trap for component.
func NewPortTrap(t testing.TB, component string) *PortTrap {
	return &PortTrap{t: t, component: component}
}

// Arm makes the next start of the component fail; port returns its port,
// which the cluster chooses at its first start.
func (p *PortTrap) Arm(port func() int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.port = port
}

// BeforeStart takes the port when the armed trap's component starts.
func (p *PortTrap) BeforeStart(component string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if component != p.component || p.port == nil || p.l != nil {
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port())))
	if err != nil {
		p.t.Errorf("taking %s's port: %v", p.component, err)
		return
	}
	p.l, p.took = l, time.Now()
}

// Took is when the trap took the port (zero if it has not).
func (p *PortTrap) Took() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.took
}

// Free disarms the trap and gives the port back.
func (p *PortTrap) Free() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.port = nil
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
}
