package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// options is the shape of a command's options: run calls the library
// package and prints. Options that fill themselves from the arguments and
// the environment also complete, and those with something to check that
// flags cannot also validate; run follows both.
type options interface {
	run(ctx context.Context) error
}

// completer is options with a complete step.
type completer interface {
	complete(cmd *cobra.Command, args []string) error
}

// validator is options with a validate step.
type validator interface {
	validate() error
}

// runOptions is the RunE of a command with options o: runcmd.RunE's, the
// one shape of chartpilot's commands (the run command's too). run's
// context ends at Ctrl-C or SIGTERM, so that a command stops cleanly.
func runOptions(o options) func(*cobra.Command, []string) error {
	return runcmd.RunE(shaped{o})
}

// shaped gives options the exported methods of runcmd's shape.
type shaped struct{ options }

func (s shaped) Complete(cmd *cobra.Command, args []string) error {
	if c, ok := s.options.(completer); ok {
		return c.complete(cmd, args)
	}
	return nil
}

func (s shaped) Validate() error {
	if v, ok := s.options.(validator); ok {
		return v.validate()
	}
	return nil
}

func (s shaped) Run(ctx context.Context) error { return s.run(ctx) }
