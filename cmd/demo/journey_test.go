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

// doneWithin waits for ch, for at most a few seconds: long enough for a
// step that runs beside it, never long enough for one that waits for it.
func doneWithin(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New(what + " did not happen while the components built: the streams ran one after the other")
	}
}

// The steps run while the components build: the fake build's first stage
// ends only once a step that needs no cluster has finished, its second
// only once a step after the cluster's start has; so the test fails when
// the streams run one after the other. A step that needs a stage waits for
// it, and its time includes the wait.
func TestStepsRunWhileBuilding(t *testing.T) {
	d := &demo{r: &runner{out: io.Discard, logDir: t.TempDir()}}
	scaffolded, subscribed := make(chan struct{}), make(chan struct{})
	var coreBuilt, v1Built atomic.Bool
	core := newStage(func(context.Context) error {
		if err := doneWithin(scaffolded, "the scaffold"); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // the core's last go build, after the steps
		coreBuilt.Store(true)
		return nil
	})
	v1 := newStage(func(context.Context) error {
		if err := doneWithin(subscribed, "the subscription"); err != nil {
			return err
		}
		v1Built.Store(true)
		return nil
	})
	needs := func(what string, built *atomic.Bool) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			if !built.Load() {
				return "", errors.New(what + " ran before its components were built")
			}
			return "", nil
		}
	}
	steps := []step{
		{"scaffold", func(context.Context) (string, error) { close(scaffolded); return "", nil }},
		{"bundle", func(context.Context) (string, error) { return "", nil }},
		{"start", core.then(needs("the cluster's start", &coreBuilt))},
		{"subscribe", func(context.Context) (string, error) { close(subscribed); return "", nil }},
		{"add OLM v1", v1.then(needs("OLM v1's start", &v1Built))},
	}
	if err := d.twoStreams(t.Context(), []*stage{core, v1}, steps); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, s := range d.r.steps {
		titles = append(titles, s.Title)
	}
	if got := strings.Join(titles, ", "); got != "scaffold, bundle, start, subscribe, add OLM v1" {
		t.Fatalf("steps %s, want all five in order", got)
	}
	if wait := d.r.steps[2].Duration; wait < 150*time.Millisecond {
		t.Errorf("the start took %s: its time lacks the wait for the build", wait)
	}
}

// The first error of either stream stops the other: twoStreams returns it
// once both have ended, and a step cut short says why.
func TestTwoStreamsStopOnError(t *testing.T) {
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
		// build is the components' build; stepsFinished tells it when the
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
			core := newStage(func(ctx context.Context) error {
				defer buildEnded.Store(true)
				return tt.build(ctx, finished)
			})
			// A later stage never builds after the core failed, and the
			// steps that wait for it end.
			later := newStage(func(context.Context) error {
				t.Error("a stage built after the one before it failed")
				return nil
			})
			never := func(context.Context) (string, error) {
				t.Error("a step ran after an error")
				return "", nil
			}
			steps := []step{
				{"bundle", func(ctx context.Context) (string, error) {
					defer close(finished)
					return "", tt.step(ctx)
				}},
				{"start", core.then(never)},
				{"add OLM v1", later.then(never)},
			}
			err := d.twoStreams(t.Context(), []*stage{core, later}, steps)
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if !buildEnded.Load() {
				t.Error("twoStreams returned with the build still running")
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
// for the image's name) and on a kwok node, for each OLM. Through both
// OLMs on a cluster of its own, OLM v1's components build in a stage of
// their own and join the cluster right before OLM v1's steps.
func TestPlan(t *testing.T) {
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
				steps, stages, err := d.plan()
				if err != nil {
					t.Fatal(err)
				}
				offline := d.kwokOfflineSteps()
				if node == cluster.NodeReal {
					offline = d.imageOfflineSteps()
					if d.registryPort == 0 || !strings.HasSuffix(d.img("0.1.0"), strconv.Itoa(d.registryPort)+"/hello-operator:v0.1.0") {
						t.Errorf("the operator image %s is not named for the registry's port %d", d.img("0.1.0"), d.registryPort)
					}
				}
				all := strings.Join(titles(steps), "\n")
				if got := titles(steps[:len(offline)]); !slices.Equal(got, titles(offline)) {
					t.Errorf("steps before the cluster's start:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(titles(offline), "\n"))
				}
				if start := steps[len(offline)].title; !strings.HasPrefix(start, "Start the local cluster") {
					t.Errorf("step %d is %q, want the cluster's start:\n%s", len(offline)+1, start, all)
				}
				add := slices.IndexFunc(steps, func(s step) bool { return strings.HasPrefix(s.title, "Add OLM v1") })
				first := slices.IndexFunc(steps, func(s step) bool { return strings.HasPrefix(s.title, "OLM v1") })
				if v == cluster.OLMBoth {
					if len(stages) != 2 || add < 0 || add+1 != first {
						t.Errorf("%d stages; OLM v1 added at step %d, its steps from %d:\n%s", len(stages), add+1, first+1, all)
					}
					return
				}
				if len(stages) != 1 || add >= 0 {
					t.Errorf("%d stages, OLM v1 added at step %d: want one stage, the cluster started with its OLM:\n%s", len(stages), add+1, all)
				}
			})
		}
	}
}
