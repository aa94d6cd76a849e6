package cli

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// recorder records the steps runOptions calls and fails at one of them.
type recorder struct {
	steps  []string
	failAt string
}

func (r *recorder) step(name string) error {
	r.steps = append(r.steps, name)
	if name == r.failAt {
		return errors.New(name + " failed")
	}
	return nil
}

func (r *recorder) complete(*cobra.Command, []string) error { return r.step("complete") }
func (r *recorder) validate() error                         { return r.step("validate") }
func (r *recorder) run(context.Context) error               { return r.step("run") }

// complete, validate, run, in order; a step that fails stops the next.
func TestRunOptions(t *testing.T) {
	for _, tt := range []struct {
		failAt string
		want   []string
	}{
		{failAt: "", want: []string{"complete", "validate", "run"}},
		{failAt: "complete", want: []string{"complete"}},
		{failAt: "validate", want: []string{"complete", "validate"}},
		{failAt: "run", want: []string{"complete", "validate", "run"}},
	} {
		r := &recorder{failAt: tt.failAt}
		cmd := &cobra.Command{}
		cmd.SetContext(context.Background()) // as Execute does
		err := runOptions(r)(cmd, nil)
		if (err != nil) != (tt.failAt != "") {
			t.Errorf("failing at %q: error %v", tt.failAt, err)
		}
		if !slices.Equal(r.steps, tt.want) {
			t.Errorf("failing at %q: steps %v, want %v", tt.failAt, r.steps, tt.want)
		}
	}
}

// runOnly has nothing to complete or validate.
type runOnly struct{ ran bool }

func (r *runOnly) run(context.Context) error { r.ran = true; return nil }

// Options without complete and validate just run.
func TestRunOptionsRunOnly(t *testing.T) {
	r := &runOnly{}
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	if err := runOptions(r)(cmd, nil); err != nil || !r.ran {
		t.Errorf("ran %v, error %v", r.ran, err)
	}
}
