package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/scorecard"
)

// scorecardOptions are scorecard's flags and arguments.
type scorecardOptions struct {
	scorecard.Options
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	bundle      string
	selector    string
	list        bool
	results     string
	output      *enumFlag
	opLogs      bool
}

func newScorecardCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &scorecardOptions{streams: streams, configFlags: configFlags, output: newEnumFlag(scorecard.FormatText, scorecard.Formats...)}
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
operator nothing and names each missing rule. With --operator-from-image the
operator runs as the CSV's Deployment, from its image, in the test namespace
(the refusals are then read from its logs).

Exit status: 0 when every test passed, 1 when a test failed, 2 when a test
could not run (or none could).`,
		Example: `  chartpilot scorecard bundle -l suite!=chartpilot              # static tests only
  chartpilot scorecard bundle --kubeconfig ~/.kube/config -o xunit > scorecard.xml
  chartpilot scorecard bundle --from-bundle ../v0.1.0/bundle -l test=chartpilot-upgrade-test
  chartpilot scorecard bundle --list`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	fl := cmd.Flags()
	fl.StringVarP(&o.selector, "selector", "l", "", "run the tests whose config.yaml labels match this selector (e.g. suite=olm, test!=chartpilot-upgrade-test)")
	fl.BoolVarP(&o.list, "list", "L", false, "list the tests that would run, without running them")
	fl.VarP(o.output, "output", "o", "output format: text, json (a v1alpha3 TestList) or xunit")
	fl.StringVar(&o.results, "results", "", "also write the results, as JSON, to this file (read by bundle generation as evidence)")
	fl.StringVar(&o.ProjectDir, "project", "", "the project whose watches.yaml and charts the operator runs (default: the bundle directory's parent; for a bundle image, the current directory)")
	fl.StringVar(&o.FromBundleDir, "from-bundle", "", "the previous release's bundle (directory or image), which chartpilot-upgrade upgrades from")
	fl.StringVar(&o.FromProjectDir, "from-project", "", "the previous release's project (default: the --from-bundle directory's parent)")
	fl.BoolVar(&o.opLogs, "operator-logs", false, "write the in-process operator's logs to stderr")
	fl.BoolVar(&o.OperatorFromImage, "operator-from-image", false, "run the operator as the CSV's Deployment from its image in each test namespace, as OLM would (the cluster's nodes must run pods and pull the image), instead of in-process as its ServiceAccount")
	fl.DurationVar(&o.WaitTime, "wait-time", scorecard.DefaultWaitTime, "how long a cluster test waits for each step (CRDs established, CRs Deployed and Ready, objects gone)")
	return cmd
}

// complete's and validate's errors exit 2, as the tests could not run.
func (o *scorecardOptions) complete(_ *cobra.Command, args []string) error {
	o.bundle = args[0]
	// The in-process operator logs through controller-runtime's logger,
	// which must be set either way.
	o.Log = logr.Discard()
	if o.opLogs {
		o.Log = zap.New(zap.WriteTo(o.streams.ErrOut))
	}
	ctrl.SetLogger(o.Log)
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("--selector: %w", err)}
	}
	o.Selector = sel
	return nil
}

func (o *scorecardOptions) validate() error {
	if o.FromBundleDir != "" && o.FromProjectDir == "" && ociimage.IsReference(o.FromBundleDir) {
		return &ExitError{Code: 2, Err: fmt.Errorf("--from-bundle %s is an image: give the project it was built from with --from-project", o.FromBundleDir)}
	}
	return nil
}

// run runs (or lists) the tests; an *ExitError carries the exit status.
func (o *scorecardOptions) run(ctx context.Context) error {
	bundleDir, cleanup, err := scorecard.LocalBundle(ctx, o.bundle)
	defer cleanup()
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("bundle: %w", err)}
	}
	if bundleDir != o.bundle && o.ProjectDir == "" {
		// A pulled bundle has no project around it: the current directory
		// is the project.
		o.ProjectDir = "."
	}
	o.BundleDir = bundleDir
	if o.FromBundleDir != "" {
		fromDir, cleanup, err := scorecard.LocalBundle(ctx, o.FromBundleDir)
		defer cleanup()
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("--from-bundle: %w", err)}
		}
		o.FromBundleDir = fromDir
	}
	if o.list {
		l, err := scorecard.List(o.Options)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		return scorecard.WriteResults(o.streams.Out, l, o.output.String())
	}
	if o.Config, err = scorecardCluster(o.configFlags); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	res, err := scorecard.Run(ctx, o.Options)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if o.results != "" {
		if err := scorecard.WriteResultsFile(o.results, res); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
	}
	if err := scorecard.WriteResults(o.streams.Out, res, o.output.String()); err != nil {
		return err
	}
	if code := scorecard.ExitCode(res); code != 0 {
		return &ExitError{Code: code, Err: fmt.Errorf("scorecard: %s", scorecard.Summary(res))}
	}
	return nil
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

// ExitError ends chartpilot with exit status Code; its Err is printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }
