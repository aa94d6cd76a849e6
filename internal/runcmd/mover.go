package runcmd

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// MoverOptions are the flags of `mover backup|restore`.
type MoverOptions struct {
	// From and To are the volume's folder and the archive file (backup),
	// or the archive file and the folder (restore).
	From, To string
	// TerminationLog receives the result as JSON, which the operator reads
	// from the pod's status.
	TerminationLog string
}

// NewMover returns the mover command the short-lived pods of backups and
// restores run, from the operator's own image.
func NewMover(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "mover",
		Short:  "Copy a volume to or from a tar+gzip archive (what backup and restore pods run)",
		Hidden: true,
	}
	cmd.AddCommand(moverCommand(streams, "backup", "Archive the folder --from into the file --to", mover.ArchiveFile))
	cmd.AddCommand(moverCommand(streams, "restore", "Extract the archive --from into the folder --to", mover.ExtractFile))
	cmd.AddCommand(moverCommand(streams, "probe-write", "Write the text --from into the file --to", func(from, to string) (mover.Result, error) {
		return mover.Probe(to, from, true)
	}))
	cmd.AddCommand(moverCommand(streams, "probe-check", "Check that the file --to holds the text --from", func(from, to string) (mover.Result, error) {
		return mover.Probe(to, from, false)
	}))
	return cmd
}

func moverCommand(streams genericiooptions.IOStreams, use, short string, copyFn func(from, to string) (mover.Result, error)) *cobra.Command {
	var opts MoverOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if opts.From == "" || opts.To == "" {
				return fmt.Errorf("--from and --to are required")
			}
			res, err := copyFn(opts.From, opts.To)
			if err != nil {
				res.Error = err.Error()
			}
			out, _ := json.Marshal(res)
			fmt.Fprintln(streams.Out, string(out))
			if opts.TerminationLog != "" {
				if werr := os.WriteFile(opts.TerminationLog, out, 0o644); werr != nil && err == nil {
					err = fmt.Errorf("writing the result to %s: %w", opts.TerminationLog, werr)
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "what to copy")
	cmd.Flags().StringVar(&opts.To, "to", "", "where to copy it")
	cmd.Flags().StringVar(&opts.TerminationLog, "termination-log", "/dev/termination-log", "file that receives the result as JSON (empty: none)")
	return cmd
}
