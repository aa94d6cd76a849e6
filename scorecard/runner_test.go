package scorecard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// stageLog records what a stage's fake tests saw: the tests that ran at
// once, and those that ran alone.
type stageLog struct {
	mu      sync.Mutex
	active  map[string]bool
	entered map[string]bool
	// overlapped are the tests another test ran beside.
	overlapped map[string]bool
	done       []string
	// alone are the tests no other test ran beside, in order.
	alone []string
	// beside are the tests that must all run at once: each waits until
	// all have started, so that a stage running them one at a time fails.
	beside   []string
	problems []string
}

func (l *stageLog) test(name string) testFunc {
	return func(ctx context.Context, _ *run) v1alpha3.TestResult {
		l.mu.Lock()
		l.active[name], l.entered[name] = true, true
		if len(l.active) > 1 {
			for a := range l.active {
				l.overlapped[a] = true
			}
		}
		l.mu.Unlock()
		if slices.Contains(l.beside, name) {
			l.waitBeside(name)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.overlapped[name] {
			l.alone = append(l.alone, name)
		}
		delete(l.active, name)
		l.done = append(l.done, name)
		return v1alpha3.TestResult{State: v1alpha3.PassState}
	}
}

func (l *stageLog) waitBeside(name string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		all := true
		for _, b := range l.beside {
			all = all && l.entered[b]
		}
		l.mu.Unlock()
		if all {
			return
		}
		time.Sleep(time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf("%s did not run beside all of %v", name, l.beside))
}

// A parallel stage runs its tests side by side, but those that install
// the previous bundle, which run alone after the others; a sequential
// stage runs them one at a time in order.
func TestRunStage(t *testing.T) {
	type fake struct {
		name              string
		cluster, previous bool
	}
	all := []fake{
		{name: "static-a"}, {name: "static-b"},
		{name: "install", cluster: true}, {name: "upgrade", cluster: true, previous: true},
		{name: "uninstall", cluster: true}, {name: "rbac", cluster: true, previous: true},
	}
	tests := []struct {
		name      string
		parallel  bool
		from      string
		wantBside []string
		// wantAlone are the tests that ran with no other, in order.
		wantAlone []string
	}{
		{
			name: "parallel, no previous bundle", parallel: true,
			wantBside: []string{"static-a", "static-b", "install", "upgrade", "uninstall", "rbac"},
		},
		{
			name: "parallel, from a previous bundle", parallel: true, from: "previous/bundle",
			wantBside: []string{"static-a", "static-b", "install", "uninstall"},
			wantAlone: []string{"upgrade", "rbac"},
		},
		{
			name: "sequential", from: "previous/bundle",
			wantAlone: []string{"static-a", "static-b", "install", "upgrade", "uninstall", "rbac"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &stageLog{active: map[string]bool{}, entered: map[string]bool{}, overlapped: map[string]bool{}, beside: tt.wantBside}
			var planned []plannedTest
			for _, f := range all {
				b := builtin{name: f.name, cluster: f.cluster, previous: f.previous, run: l.test(f.name)}
				planned = append(planned, plannedTest{parallel: tt.parallel, test: b})
			}
			r := &run{opts: Options{FromBundleDir: tt.from}}
			out := make([]v1alpha3.Test, len(planned))
			r.runStage(context.Background(), planned, out)
			for _, p := range l.problems {
				t.Error(p)
			}
			if !slices.Equal(l.alone, tt.wantAlone) {
				t.Errorf("alone %v, want %v (done in order %v)", l.alone, tt.wantAlone, l.done)
			}
			for i, item := range out {
				if got := item.Status.Results[0].Name; got != all[i].name {
					t.Errorf("result %d is %q, want %q: results stay in the config's order", i, got, all[i].name)
				}
				if log := item.Status.Results[0].Log; slices.Contains(tt.wantAlone, all[i].name) && tt.parallel && !strings.Contains(log, "ran alone after") {
					t.Errorf("%s's log does not say it ran alone after the others: %q", all[i].name, log)
				}
			}
		})
	}
}
