package reconciler

import (
	"testing"
	"time"
)

func TestDrifts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		// repair records a repair at the step's time; otherwise the step
		// asks whether repair is suspended and expects want.
		repair  bool
		attempt string
		at      time.Duration
		want    bool
	}
	tests := []struct {
		name  string
		limit DriftLimit
		steps []step
	}{
		{name: "below the limit", limit: DriftLimit{Repairs: 2, Window: time.Minute}, steps: []step{
			{repair: true, attempt: "a"}, {attempt: "a", at: time.Second, want: false},
		}},
		{name: "the limit suspends, and it stays so", limit: DriftLimit{Repairs: 2, Window: time.Minute}, steps: []step{
			{repair: true, attempt: "a"}, {repair: true, attempt: "a", at: time.Second},
			{attempt: "a", at: 2 * time.Second, want: true},
			{attempt: "a", at: time.Hour, want: true},
		}},
		{name: "repairs out of the window do not count", limit: DriftLimit{Repairs: 2, Window: time.Minute}, steps: []step{
			{repair: true, attempt: "a"}, {repair: true, attempt: "a", at: 2 * time.Minute},
			{attempt: "a", at: 2*time.Minute + time.Second, want: false},
		}},
		{name: "a new attempt (spec or annotation changed) resumes", limit: DriftLimit{Repairs: 1, Window: time.Minute}, steps: []step{
			{repair: true, attempt: "a"}, {attempt: "a", at: time.Second, want: true},
			{attempt: "b", at: 2 * time.Second, want: false},
		}},
		{name: "negative never suspends", limit: DriftLimit{Repairs: -1}, steps: []step{
			{repair: true, attempt: "a"}, {repair: true, attempt: "a"}, {repair: true, attempt: "a"}, {attempt: "a", want: false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit.withDefaults()
			var d driftRecord
			for i, s := range tt.steps {
				if s.repair {
					d.repaired(limit, s.attempt, at(s.at))
					continue
				}
				if got := d.isSuspended(limit, s.attempt, at(s.at)); got != s.want {
					t.Errorf("step %d: suspended %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

// The check of every reconcile of a release in sync keeps nothing: only
// repairs are held, and only while they count.
func TestDriftsHoldOnlyRepairs(t *testing.T) {
	limit := DriftLimit{Repairs: 2, Window: time.Minute}
	t0 := time.Unix(1000, 0)
	var d driftRecord
	if d.isSuspended(limit, "a", t0) || d.attempt != "" || d.repairs != nil {
		t.Fatalf("a check without repairs holds %+v", d)
	}
	d.repaired(limit, "a", t0)
	if d.isSuspended(limit, "a", t0.Add(time.Second)); len(d.repairs) != 1 {
		t.Errorf("the repair in the window is not held")
	}
	if d.isSuspended(limit, "a", t0.Add(2*time.Minute)); len(d.repairs) != 0 {
		t.Errorf("a repair is held after it left the window")
	}
}

func TestDriftLimitDefaults(t *testing.T) {
	if got := (DriftLimit{}).withDefaults(); got.Repairs != 5 || got.Window != 10*time.Minute {
		t.Errorf("defaults %+v", got)
	}
}
