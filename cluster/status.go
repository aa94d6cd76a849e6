package cluster

import (
	"context"
	"time"

	"github.com/chartpilot/chartpilot/cluster/process"
)

// ComponentStatus is one component's health.
type ComponentStatus struct {
	Name string `json:"name"`
	// PID is the process id when it runs.
	PID     int  `json:"pid,omitempty"`
	Running bool `json:"running"`
	Healthy bool `json:"healthy"`
	// RSSBytes and PeakRSSBytes are the process's resident memory now and at its peak.
	RSSBytes     uint64 `json:"rssBytes,omitempty"`
	PeakRSSBytes uint64 `json:"peakRSSBytes,omitempty"`
	// Endpoint is the URL to reach it at, for the components users reach
	// directly (the registry, the object store).
	Endpoint string `json:"endpoint,omitempty"`
	// Error says why it is not healthy.
	Error string `json:"error,omitempty"`
	Log   string `json:"log"`
}

// Status checks every component: its process and its health endpoint.
func (c *Cluster) Status(ctx context.Context) []ComponentStatus {
	var out []ComponentStatus
	for _, comp := range c.components(nil) {
		st := ComponentStatus{Name: comp.name, Endpoint: comp.endpoint, Log: c.LogFile(comp.name)}
		pid, ok := process.Find(c.pidFile(comp.name))
		st.PID, st.Running = pid, ok
		if !ok {
			st.Error = "not running"
			out = append(out, st)
			continue
		}
		st.RSSBytes, st.PeakRSSBytes, _ = process.Memory(pid)
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := comp.health(pctx); err != nil {
			st.Error = err.Error()
		} else {
			st.Healthy = true
		}
		cancel()
		out = append(out, st)
	}
	return out
}
