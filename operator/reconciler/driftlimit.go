package reconciler

import (
	"fmt"
	"time"
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

// driftRecord is a CR's recent repairs of its current attempt (see failure:
// the digest and the annotations) and whether repair is suspended. A new
// attempt, i.e. a change to the spec or an annotation, starts afresh: that
// is how a user says the fight is over. It is kept in memory: an operator
// that restarts repairs again, up to the limit.
type driftRecord struct {
	attempt   string
	repairs   []time.Time
	suspended bool
}

// prune starts afresh for a new attempt and drops the repairs out of the window.
func (d *driftRecord) prune(limit DriftLimit, attempt string, now time.Time) {
	if d.attempt != attempt {
		*d = driftRecord{attempt: attempt}
	}
	kept := d.repairs[:0]
	for _, t := range d.repairs {
		if now.Sub(t) < limit.Window {
			kept = append(kept, t)
		}
	}
	d.repairs = kept
}

// isSuspended says whether drift of the CR's release is to be left alone:
// the limit was reached by this attempt.
func (d *driftRecord) isSuspended(limit DriftLimit, attempt string, now time.Time) bool {
	if limit.Repairs < 0 || len(d.repairs) == 0 && !d.suspended {
		// Nothing repaired lately, as for most CRs: nothing to hold.
		return false
	}
	d.prune(limit, attempt, now)
	if len(d.repairs) >= limit.Repairs {
		d.suspended = true
	}
	return d.suspended
}

// repaired records a repair and returns how many fell within the window.
func (d *driftRecord) repaired(limit DriftLimit, attempt string, now time.Time) int {
	d.prune(limit, attempt, now)
	d.repairs = append(d.repairs, now)
	return len(d.repairs)
}
