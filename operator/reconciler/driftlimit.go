package reconciler

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DriftLimit is how much drift repair a release gets before the operator
// stops: once Repairs repairs fell within Window, the next drift is reported
// and left alone, on the grounds that another controller edits the objects
// and repairing would fight it forever. Zero values take 5 repairs in 10
// minutes; a negative Repairs never stops repairing.
type DriftLimit struct {
	Repairs int
	Window  time.Duration
}

// The limit of a zero DriftLimit.
const (
	DefaultDriftRepairs = 5
	DefaultDriftWindow  = 10 * time.Minute
)

func (l DriftLimit) withDefaults() DriftLimit {
	if l.Repairs == 0 {
		l.Repairs = DefaultDriftRepairs
	}
	if l.Window <= 0 {
		l.Window = DefaultDriftWindow
	}
	return l
}

func (l DriftLimit) String() string {
	return fmt.Sprintf("%d repairs within %s", l.Repairs, l.Window)
}

// drifts remembers, per CR, the recent repairs of its current attempt (see
// retries: the digest and the annotations) and whether repair is suspended.
// A new attempt, i.e. a change to the spec or an annotation, starts afresh:
// that is how a user says the fight is over. It is kept in memory: an
// operator that restarts repairs again, up to the limit.
type drifts struct {
	limit DriftLimit
	mu    sync.Mutex
	byCR  map[types.NamespacedName]*driftRecord
}

type driftRecord struct {
	attempt   string
	repairs   []time.Time
	suspended bool
}

// record returns the CR's record for attempt, pruned to the window.
func (d *drifts) record(cr types.NamespacedName, attempt string, now time.Time) *driftRecord {
	if d.byCR == nil {
		d.byCR = map[types.NamespacedName]*driftRecord{}
	}
	r, ok := d.byCR[cr]
	if !ok || r.attempt != attempt {
		r = &driftRecord{attempt: attempt}
		d.byCR[cr] = r
	}
	kept := r.repairs[:0]
	for _, t := range r.repairs {
		if now.Sub(t) < d.limit.Window {
			kept = append(kept, t)
		}
	}
	r.repairs = kept
	return r
}

// suspended says whether drift of the CR's release is to be left alone: the
// limit was reached by this attempt.
func (d *drifts) suspended(cr types.NamespacedName, attempt string, now time.Time) bool {
	if d.limit.Repairs < 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.byCR[cr]; !ok {
		// Nothing repaired lately, as for most CRs: nothing to hold.
		return false
	}
	r := d.record(cr, attempt, now)
	if len(r.repairs) >= d.limit.Repairs {
		r.suspended = true
	}
	if len(r.repairs) == 0 && !r.suspended {
		delete(d.byCR, cr)
	}
	return r.suspended
}

// repaired records a repair and returns how many fell within the window.
func (d *drifts) repaired(cr types.NamespacedName, attempt string, now time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.record(cr, attempt, now)
	r.repairs = append(r.repairs, now)
	return len(r.repairs)
}

func (d *drifts) forget(cr types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byCR, cr)
}
