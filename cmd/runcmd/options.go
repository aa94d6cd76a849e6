package runcmd

import (
	"context"
	"reflect"

	"github.com/spf13/cobra"
)

// Options is the shape of every command's options, in chartpilot and in
// chartpilot-operator (kubectl's): Complete fills them from the arguments
// and the environment, Validate checks what flags cannot, Run calls the
// library package and prints.
type Options interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE is the RunE of a command with options o. Run's context ends at
// Ctrl-C or SIGTERM, so that a command stops cleanly.
func RunE(o Options) func(*cobra.Command, []string) error {
	return runner{o}.runE
}

// runner is a command's options; its runE method value is every RunE
// that RunE returns, which Inspect recognizes by its code.
type runner struct{ o Options }

func (r runner) runE(cmd *cobra.Command, args []string) error {
	if seen, ok := cmd.Context().Value(inspectKey{}).(*Options); ok {
		*seen = r.o
		return nil
	}
	if err := r.o.Complete(cmd, args); err != nil {
		return err
	}
	if err := r.o.Validate(); err != nil {
		return err
	}
	ctx, cancel := SignalContext(cmd.Context())
	defer cancel()
	return r.o.Run(ctx)
}

// inspectKey in a command's context makes RunE hand its options over
// instead of running: see Inspect.
type inspectKey struct{}

// Inspect returns the options of a command whose RunE comes from RunE,
// without running anything; ok is false for any other command. Tests use
// it to check every command's shape and what its options hold.
func Inspect(cmd *cobra.Command) (o Options, ok bool) {
	if cmd.RunE == nil || reflect.ValueOf(cmd.RunE).Pointer() != reflect.ValueOf(runner{}.runE).Pointer() {
		return nil, false
	}
	saved := cmd.Context()
	defer cmd.SetContext(saved)
	cmd.SetContext(context.WithValue(context.Background(), inspectKey{}, &o))
	if err := cmd.RunE(cmd, nil); err != nil || o == nil {
		return nil, false
	}
	return o, true
}
