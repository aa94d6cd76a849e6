package runcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// MoverOptions are the flags of `mover backup|restore`.
type MoverOptions struct {
	// From and To are the volume's folder and the archive file (backup),
	// or the archive file and the folder (restore); with an S3 bucket the
	// archive is the object key.
	From, To string
	// S3 is the store, when S3.Bucket is set; its credentials come from
	// the environment (backup.S3AccessKeyEnv, backup.S3SecretKeyEnv).
	S3 mover.S3
	// Listen is where `serve` listens (the pod's IP and a port);
	// ServeTimeout ends it when nobody fetched the archive by then.
	Listen       string
	ServeTimeout time.Duration
	// TerminationLog receives the result as JSON, which the operator reads
	// from the pod's status.
	TerminationLog string
}

// copyFunc copies with the options' from, to and store.
type copyFunc func(ctx context.Context, o MoverOptions) (mover.Result, error)

// NewMover returns the mover command the short-lived pods of backups and
// restores run, from the operator's own image.
func NewMover(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "mover",
		Short:  "Copy a volume to or from a tar+gzip archive (what backup and restore pods run)",
		Hidden: true,
	}
	cmd.AddCommand(moverCommand(streams, "backup", "Archive the folder --from into the file (or object key) --to", func(ctx context.Context, o MoverOptions) (mover.Result, error) {
		if o.S3.Bucket != "" {
			return mover.ArchiveS3(ctx, o.From, o.S3, o.To)
		}
		return mover.ArchiveFile(o.From, o.To)
	}))
	cmd.AddCommand(moverCommand(streams, "restore", "Extract the archive file (or object key) --from into the folder --to", func(ctx context.Context, o MoverOptions) (mover.Result, error) {
		switch {
		case o.S3.Bucket != "":
			return mover.ExtractS3(ctx, o.S3, o.From, o.To)
		case strings.HasPrefix(o.From, "http://"):
			return mover.ExtractHTTP(ctx, o.From, os.Getenv(backup.ArchiveTokenEnv), o.To)
		}
		return mover.ExtractFile(o.From, o.To)
	}))
	cmd.AddCommand(moverCommand(streams, "serve", "Serve the archive file --from once, on --listen, to a fetcher with the token of $"+backup.ArchiveTokenEnv, func(ctx context.Context, o MoverOptions) (mover.Result, error) {
		return mover.ServeOnce(ctx, mover.ServeOptions{File: o.From, Addr: o.Listen, Token: os.Getenv(backup.ArchiveTokenEnv), Timeout: o.ServeTimeout})
	}))
	cmd.AddCommand(moverCommand(streams, "delete", "Delete the folder --to of a backup's archives", func(_ context.Context, o MoverOptions) (mover.Result, error) {
		return mover.RemoveArchives(o.To)
	}))
	cmd.AddCommand(moverCommand(streams, "probe-write", "Write the text --from into the file --to", func(_ context.Context, o MoverOptions) (mover.Result, error) {
		return mover.Probe(o.To, o.From, true)
	}))
	cmd.AddCommand(moverCommand(streams, "probe-check", "Check that the file --to holds the text --from", func(_ context.Context, o MoverOptions) (mover.Result, error) {
		return mover.Probe(o.To, o.From, false)
	}))
	return cmd
}

func moverCommand(streams genericiooptions.IOStreams, use, short string, copyFn copyFunc) *cobra.Command {
	var opts MoverOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(use); err != nil {
				return err
			}
			opts.S3.AccessKeyID, opts.S3.SecretAccessKey = os.Getenv(backup.S3AccessKeyEnv), os.Getenv(backup.S3SecretKeyEnv)
			ctx, cancel := SignalContext(cmd.Context())
			defer cancel()
			res, err := copyFn(ctx, opts)
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
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "from", "", "what to copy")
	fl.StringVar(&opts.To, "to", "", "where to copy it")
	fl.StringVar(&opts.S3.Endpoint, "s3-endpoint", "", "host:port of the S3 store holding the archive")
	fl.StringVar(&opts.S3.Bucket, "s3-bucket", "", "bucket of the archive: --to (backup) or --from (restore) is its key")
	fl.StringVar(&opts.S3.Region, "s3-region", "", "region of the bucket")
	fl.BoolVar(&opts.S3.Insecure, "s3-insecure", false, "plain HTTP to the store")
	fl.StringVar(&opts.Listen, "listen", "", "host:port that serve listens on")
	fl.DurationVar(&opts.ServeTimeout, "serve-timeout", 10*time.Minute, "how long serve waits for its fetcher")
	fl.StringVar(&opts.TerminationLog, "termination-log", "/dev/termination-log", "file that receives the result as JSON (empty: none)")
	return cmd
}

// validate names the flag a command lacks.
func (o MoverOptions) validate(use string) error {
	switch {
	case use == "serve" && (o.From == "" || o.Listen == ""):
		return fmt.Errorf("serve: --from and --listen are required")
	case use == "serve":
		return nil
	case (o.From == "" && use != "delete") || o.To == "":
		return fmt.Errorf("--from and --to are required")
	}
	return nil
}
