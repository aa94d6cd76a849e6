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

// runOptions is the RunE of a command with options o. run's context ends
// at Ctrl-C or SIGTERM, so that a command stops cleanly.
func runOptions(o options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.complete(cmd, args); err != nil {
			return err
		}
		if err := o.validate(); err != nil {
			return err
		}
		ctx, cancel := runcmd.SignalContext(cmd.Context())
		defer cancel()
		return o.run(ctx)
	}
}
