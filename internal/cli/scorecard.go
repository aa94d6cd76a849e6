package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/runcmd"
	"github.com/chartpilot/chartpilot/scorecard"
)

func newScorecardCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		opts     scorecard.Options
		selector string
		list     bool
		results  string
		output   = newEnumFlag(scorecard.FormatText, scorecard.Formats...)
		opLogs   bool
	)
	cmd := &cobra.Command{
		Use:   "scorecard BUNDLE_DIR|BUNDLE_IMAGE",
		Short: "Run operator-sdk's scorecard tests in-process, and chartpilot's install, upgrade, uninstall and RBAC tests on a cluster",
		Long: `Run the scorecard tests of a registry+v1 bundle (a directory, or an image that
is pulled). The bundle's tests/scorecard/config.yaml (operator-sdk's format)
chooses the tests; without one the built-in default set runs.

Suite basic and olm (static, no cluster): basic-check-spec,
olm-bundle-validation, olm-crds-have-validation, olm-crds-have-resources,
olm-spec-descriptors, olm-status-descriptors, as operator-sdk's.

Suite chartpilot (on the cluster of --kubeconfig; each test in a fresh
namespace, cleaned up after): chartpilot-install installs the CRDs and the
CSV's permissions, runs the operator of --project in-process as the CSV's
ServiceAccount and waits for every alm-example to be Deployed and Ready;
chartpilot-upgrade does that with --from-bundle's operator, then switches to
this one; chartpilot-uninstall deletes the CRs and checks that nothing of
their releases is left; chartpilot-rbac checks that the API server refused the
operator nothing and names each missing rule.

Exit status: 0 when every test passed, 1 when a test failed, 2 when a test
could not run (or none could).`,
		Example: `  chartpilot scorecard bundle -l suite!=chartpilot              # static tests only
  chartpilot scorecard bundle --kubeconfig ~/.kube/config -o xunit > scorecard.xml
  chartpilot scorecard bundle --from-bundle ../v0.1.0/bundle -l test=chartpilot-upgrade-test
  chartpilot scorecard bundle --list`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := runcmd.SignalContext(cmd.Context())
			defer cancel()
			// The in-process operator logs through controller-runtime's
			// logger, which must be set either way.
			log := logr.Discard()
			if opLogs {
				log = zap.New(zap.WriteTo(streams.ErrOut))
			}
			ctrl.SetLogger(log)
			opts.Log = log
			sel, err := labels.Parse(selector)
			if err != nil {
				return &ExitError{Code: 2, Err: fmt.Errorf("--selector: %w", err)}
			}
			opts.Selector = sel
			bundleDir, cleanup, err := localBundle(cmd.Context(), args[0], "bundle")
			defer cleanup()
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			if bundleDir != args[0] && opts.ProjectDir == "" {
				// A pulled bundle has no project around it: the current
				// directory is the project.
				opts.ProjectDir = "."
			}
			opts.BundleDir = bundleDir
			if opts.FromBundleDir != "" {
				fromDir, cleanup, err := localBundle(cmd.Context(), opts.FromBundleDir, "--from-bundle")
				defer cleanup()
				if err != nil {
					return &ExitError{Code: 2, Err: err}
				}
				if fromDir != opts.FromBundleDir && opts.FromProjectDir == "" {
					return &ExitError{Code: 2, Err: fmt.Errorf("--from-bundle %s is an image: give the project it was built from with --from-project", opts.FromBundleDir)}
				}
				opts.FromBundleDir = fromDir
			}
			if list {
				l, err := scorecard.List(opts)
				if err != nil {
					return &ExitError{Code: 2, Err: err}
				}
				return scorecard.WriteResults(streams.Out, l, output.String())
			}
			if opts.Config, err = scorecardCluster(configFlags); err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			res, err := scorecard.Run(ctx, opts)
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			if results != "" {
				if err := writeResultsFile(results, res); err != nil {
					return &ExitError{Code: 2, Err: err}
				}
			}
			if err := scorecard.WriteResults(streams.Out, res, output.String()); err != nil {
				return err
			}
			if code := scorecard.ExitCode(res); code != 0 {
				return &ExitError{Code: code, Err: fmt.Errorf("scorecard: %s", summary(res))}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&selector, "selector", "l", "", "run the tests whose config.yaml labels match this selector (e.g. suite=olm, test!=chartpilot-upgrade-test)")
	fl.BoolVarP(&list, "list", "L", false, "list the tests that would run, without running them")
	fl.VarP(output, "output", "o", "output format: text, json (a v1alpha3 TestList) or xunit")
	fl.StringVar(&results, "results", "", "also write the results, as JSON, to this file (read by bundle generation as evidence)")
	fl.StringVar(&opts.ProjectDir, "project", "", "the project whose watches.yaml and charts the operator runs (default: the bundle directory's parent; for a bundle image, the current directory)")
	fl.StringVar(&opts.FromBundleDir, "from-bundle", "", "the previous release's bundle (directory or image), which chartpilot-upgrade upgrades from")
	fl.StringVar(&opts.FromProjectDir, "from-project", "", "the previous release's project (default: the --from-bundle directory's parent)")
	fl.BoolVar(&opLogs, "operator-logs", false, "write the in-process operator's logs to stderr")
	fl.DurationVar(&opts.WaitTime, "wait-time", scorecard.DefaultWaitTime, "how long a cluster test waits for each step (CRDs established, CRs Deployed and Ready, objects gone)")
	return cmd
}

// scorecardCluster is the cluster of the kubeconfig flags, or nil when there
// is none: the cluster tests are then not run.
func scorecardCluster(f *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := runcmd.KubeConfig(f)
	if errors.Is(err, runcmd.ErrNoCluster) && *f.KubeConfig == "" {
		return nil, nil
	}
	return cfg, err
}

// localBundle returns a bundle directory for arg: arg itself, or a
// temporary directory the image arg is pulled into, which cleanup removes.
func localBundle(ctx context.Context, arg, what string) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	if !isImageRef(arg) {
		return arg, cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "chartpilot-scorecard-")
	if err != nil {
		return "", cleanup, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "bundle")
	if err := scorecard.PullBundle(ctx, arg, dir); err != nil {
		return "", cleanup, fmt.Errorf("%s: %w", what, err)
	}
	return dir, cleanup, nil
}

func writeResultsFile(path string, list v1alpha3.TestList) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(list); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}

func summary(list v1alpha3.TestList) string {
	var failed, errored []string
	for _, t := range list.Items {
		for _, r := range t.Status.Results {
			switch r.State {
			case v1alpha3.FailState:
				failed = append(failed, r.Name)
			case v1alpha3.ErrorState:
				errored = append(errored, r.Name)
			}
		}
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "failed: "+strings.Join(failed, ", "))
	}
	if len(errored) > 0 {
		parts = append(parts, "could not run: "+strings.Join(errored, ", "))
	}
	return strings.Join(parts, "; ")
}

// ExitError ends chartpilot with exit status Code; its Err is printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }
