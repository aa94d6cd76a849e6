package demo

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
)

// The steps that need no cluster run while the components build: the
// fake build below ends only once such a step has finished, so the test
// fails when the streams run one after the other. The cluster's start
// waits for the build, and its time includes that wait.
func TestStepsRunWhileBuilding(t *testing.T) {
	d := &demo{r: &runner{out: io.Discard, logDir: t.TempDir()}}
	scaffolded := make(chan struct{})
	var built atomic.Bool
	build := func(ctx context.Context) error {
		select {
		case <-scaffolded:
		case <-time.After(10 * time.Second):
			return errors.New("no step finished while the components built: the streams ran one after the other")
		}
		time.Sleep(200 * time.Millisecond) // the build's last go build, after the steps
		built.Store(true)
		return nil
	}
	offline := []step{
		{"scaffold", func(context.Context) (string, error) { close(scaffolded); return "scaffolded", nil }},
		{"bundle", func(context.Context) (string, error) { return "bundled", nil }},
	}
	start := step{"start", func(context.Context) (string, error) {
		if !built.Load() {
			return "", errors.New("the cluster started before its components were built")
		}
		return "started", nil
	}}
	if err := d.whileBuilding(t.Context(), build, offline, start); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, s := range d.r.steps {
		titles = append(titles, s.Title)
	}
	if got := strings.Join(titles, ", "); got != "scaffold, bundle, start" {
		t.Fatalf("steps %s, want scaffold, bundle, start", got)
	}
	if wait := d.r.steps[2].Duration; wait < 150*time.Millisecond {
		t.Errorf("the start took %s: its time lacks the wait for the build", wait)
	}
}

// The first error of either stream stops the other: whileBuilding returns
// it once both have ended, and a step cut short says why.
func TestWhileBuildingStopsOnError(t *testing.T) {
	errBuild, errStep := errors.New("go build failed"), errors.New("make bundle failed")
	// untilStopped stands for a command that runs until ctx ends.
	untilStopped := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("never stopped")
		}
	}
	tests := []struct {
		name string
		// build is the component build; steps finished tells it when the
		// steps that need no cluster have ended.
		build func(ctx context.Context, stepsFinished <-chan struct{}) error
		// step is the one step that needs no cluster.
		step func(ctx context.Context) error
		want error
		// steps are the steps recorded, each "title: error".
		steps []string
	}{
		{
			name:  "the build fails while a step runs",
			build: func(context.Context, <-chan struct{}) error { return errBuild },
			step:  untilStopped,
			want:  errBuild,
			steps: []string{"bundle: stopped: go build failed"},
		},
		{
			name:  "a step fails while the build runs",
			build: func(ctx context.Context, _ <-chan struct{}) error { return untilStopped(ctx) },
			step:  func(context.Context) error { return errStep },
			want:  errStep,
			steps: []string{"bundle: make bundle failed"},
		},
		{
			name: "the build fails after the steps",
			build: func(_ context.Context, finished <-chan struct{}) error {
				<-finished
				return errBuild
			},
			step:  func(context.Context) error { return nil },
			want:  errBuild,
			steps: []string{"bundle: ", "start: go build failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &demo{r: &runner{out: io.Discard, logDir: t.TempDir()}}
			finished := make(chan struct{})
			var buildEnded atomic.Bool
			build := func(ctx context.Context) error {
				defer buildEnded.Store(true)
				return tt.build(ctx, finished)
			}
			offline := []step{{"bundle", func(ctx context.Context) (string, error) {
				defer close(finished)
				return "", tt.step(ctx)
			}}}
			start := step{"start", func(context.Context) (string, error) {
				t.Error("the cluster started after an error")
				return "", nil
			}}
			err := d.whileBuilding(t.Context(), build, offline, start)
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if !buildEnded.Load() {
				t.Error("whileBuilding returned with the build still running")
			}
			var got []string
			for _, s := range d.r.steps {
				got = append(got, s.Title+": "+s.Err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.steps, "\n") {
				t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.steps, "\n"))
			}
		})
	}
}

// Every journey begins with the steps that need no cluster, then the
// cluster's start: through images (the registry's address picked first,
// for the image's name) and on a kwok node, for each OLM.
func TestPlanStartsWithOfflineSteps(t *testing.T) {
	titles := func(steps []step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.title)
		}
		return out
	}
	for _, node := range []cluster.NodeKind{cluster.NodeReal, cluster.NodeKwok} {
		for _, v := range []cluster.OLMVersions{cluster.OLMv0, cluster.OLMv1, cluster.OLMBoth} {
			t.Run(string(node)+"/"+string(v), func(t *testing.T) {
				d := &demo{opts: Options{Dir: t.TempDir(), Node: node, OLM: v}}
				p, err := d.plan()
				if err != nil {
					t.Fatal(err)
				}
				want := d.kwokOfflineSteps()
				if node == cluster.NodeReal {
					want = d.imageOfflineSteps()
					if d.registryPort == 0 || !strings.HasSuffix(d.img("0.1.0"), strconv.Itoa(d.registryPort)+"/hello-operator:v0.1.0") {
						t.Errorf("the operator image %s is not named for the registry's port %d", d.img("0.1.0"), d.registryPort)
					}
				}
				if got := titles(p.offline); !slices.Equal(got, titles(want)) {
					t.Errorf("steps before the cluster's start:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(titles(want), "\n"))
				}
				if !strings.HasPrefix(p.start.title, "Start the local cluster") || len(p.online) == 0 {
					t.Errorf("the cluster's start %q, then %d steps", p.start.title, len(p.online))
				}
			})
		}
	}
}
