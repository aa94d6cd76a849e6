package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// options is the shape of a command's options: complete fills them from the
// arguments and the environment, validate checks what flags cannot, run
// calls the library package and prints.
type options interface {
	complete(cmd *cobra.Command, args []string) error
	validate() error
	run(ctx context.Context) error
}

// runOptions is the RunE of a command with options o: runcmd.RunE's, the
// one shape of chartpilot's commands (the run command's too). run's
// context ends at Ctrl-C or SIGTERM, so that a command stops cleanly.
func runOptions(o options) func(*cobra.Command, []string) error {
	return runcmd.RunE(shaped{o})
}

// shaped gives options the exported methods of runcmd.Options.
type shaped struct{ options }

func (s shaped) Complete(cmd *cobra.Command, args []string) error { return s.complete(cmd, args) }
func (s shaped) Validate() error                                  { return s.validate() }
func (s shaped) Run(ctx context.Context) error                    { return s.run(ctx) }
