package reconciler

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// The lines an outage of the API server logs, once each per outage.
const (
	// OutageStartMessage is logged, with the error, by the first reconcile
	// that cannot reach the API server.
	OutageStartMessage = "the API server is unreachable or unavailable: reconciles wait for it (logged again when it answers)"
	// OutageEndMessage is logged by the first reconcile that reaches it
	// again, with how long it was away ("after"), how many CRs waited
	// ("crs") and how many of their reconciles failed ("reconciles").
	OutageEndMessage = "the API server answers again"
)

// Outage makes the API server's absence one condition of the operator,
// logged when it starts and when it ends, rather than a failure of each CR
// at each retry (about once a second: see failure.failed). The reconcilers
// of every watched kind share one; a nil *Outage logs nothing.
type Outage struct {
	log logr.Logger
	now func() time.Time

	mu sync.Mutex
	// since is when the outage began; zero while the server answers.
	since time.Time
	// crs are the CRs whose reconciles could not reach the server.
	crs        map[string]bool
	reconciles int
}

// NewOutage returns an Outage logging to log.
func NewOutage(log logr.Logger) *Outage {
	return &Outage{log: log, now: time.Now}
}

// unreachable records a reconcile of cr that could not reach the API
// server; the first of an outage logs that it began.
func (o *Outage) unreachable(cr string, err error) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		o.since, o.crs, o.reconciles = o.now(), map[string]bool{}, 0
		o.log.Error(err, OutageStartMessage)
	}
	o.crs[cr] = true
	o.reconciles++
}

// Reached records that the API server answered; the first answer after an
// outage logs that it ended.
func (o *Outage) Reached() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return
	}
	o.log.Info(OutageEndMessage, "after", o.now().Sub(o.since).Round(10*time.Millisecond).String(), "crs", len(o.crs), "reconciles", o.reconciles)
	o.since, o.crs = time.Time{}, nil
}
