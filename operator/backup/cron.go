package backup

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// maxMissed bounds the ticks walked to find the latest missed one: a
// schedule every minute missed for two months.
const maxMissed = 100000

// parseCron reads a schedule's cron expression: five fields or a
// descriptor, optionally after CRON_TZ=; UTC when no zone is named.
func parseCron(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return s, nil
}

// tick is what a schedule should do at one moment.
type tick struct {
	// due is the latest tick in (last, now], zero when none passed.
	due time.Time
	// missed counts the ticks in (last, now] before due: runs that will
	// not happen (at most one catch-up).
	missed int
	// next is the first tick after now.
	next time.Time
}

// nextTick finds, for a schedule last run at last, the tick due at now and
// the next one. Ticks are computed in UTC unless the expression names a
// zone.
func nextTick(s cron.Schedule, last, now time.Time) tick {
	var t tick
	at := s.Next(last.UTC())
	for n := 0; !at.After(now) && n < maxMissed; n, at = n+1, s.Next(at) {
		if !t.due.IsZero() {
			t.missed++
		}
		t.due = at
	}
	// The tick after the due one: @every counts from it, not from now.
	t.next = at
	if !at.After(now) {
		t.next = s.Next(now.UTC())
	}
	return t
}

// late tells whether a run due at due is past its starting deadline at
// now; no deadline means never.
func late(due, now time.Time, deadline *time.Duration) bool {
	return deadline != nil && now.Sub(due) > *deadline
}

// CheckSchedule tells whether the runtime accepts expr as a schedule's
// cron expression, with the parser's reason when not: what a client
// checks before it creates a schedule.
func CheckSchedule(expr string) error {
	_, err := parseCron(expr)
	return err
}
