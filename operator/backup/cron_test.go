package backup

import (
	"strings"
	"testing"
	"time"
)

func TestNextTick(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, cron string
		last, now  string
		// due is "" when no run is due.
		due, next string
		missed    int
	}{
		{name: "before the first tick", cron: "*/5 * * * *", last: "2026-12-03T10:01:00Z", now: "2026-12-03T10:04:59Z", next: "2026-12-03T10:05:00Z"},
		{name: "on the tick", cron: "*/5 * * * *", last: "2026-12-03T10:01:00Z", now: "2026-12-03T10:05:00Z", due: "2026-12-03T10:05:00Z", next: "2026-12-03T10:10:00Z"},
		{name: "the latest of many missed", cron: "*/5 * * * *", last: "2026-12-03T10:00:00Z", now: "2026-12-03T11:02:00Z", due: "2026-12-03T11:00:00Z", next: "2026-12-03T11:05:00Z", missed: 11},
		{name: "a week away, nightly", cron: "0 2 * * *", last: "2026-11-26T02:00:00Z", now: "2026-12-03T09:00:00Z", due: "2026-12-03T02:00:00Z", next: "2026-12-04T02:00:00Z", missed: 6},
		{name: "descriptor", cron: "@every 20s", last: "2026-12-03T10:00:00Z", now: "2026-12-03T10:00:30Z", due: "2026-12-03T10:00:20Z", next: "2026-12-03T10:00:40Z"},
		{name: "time zone", cron: "CRON_TZ=Europe/Paris 0 3 * * *", last: "2026-12-03T00:00:00Z", now: "2026-12-03T02:30:00Z", due: "2026-12-03T02:00:00Z", next: "2026-12-04T02:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseCron(tc.cron)
			if err != nil {
				t.Fatal(err)
			}
			got := nextTick(s, at(tc.last), at(tc.now))
			var due time.Time
			if tc.due != "" {
				due = at(tc.due)
			}
			if !got.due.Equal(due) || !got.next.Equal(at(tc.next)) || got.missed != tc.missed {
				t.Errorf("due %s next %s missed %d, want %s %s %d", got.due, got.next, got.missed, tc.due, tc.next, tc.missed)
			}
		})
	}
}

func TestLate(t *testing.T) {
	due := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	three := 3 * time.Minute
	for _, tc := range []struct {
		name     string
		now      time.Time
		deadline *time.Duration
		want     bool
	}{
		{name: "no deadline: never late", now: due.Add(240 * time.Hour)},
		{name: "within", now: due.Add(three), deadline: &three},
		{name: "past", now: due.Add(three + time.Second), deadline: &three, want: true},
	} {
		if got := late(due, tc.now, tc.deadline); got != tc.want {
			t.Errorf("%s: late = %v", tc.name, got)
		}
	}
}

func TestParseCronNamesTheExpression(t *testing.T) {
	for _, expr := range []string{"61 * * * *", "* * *", "@fortnightly", "CRON_TZ=Nowhere/City 0 0 * * *"} {
		if _, err := parseCron(expr); err == nil || !strings.Contains(err.Error(), expr) {
			t.Errorf("%q: %v", expr, err)
		}
	}
}
