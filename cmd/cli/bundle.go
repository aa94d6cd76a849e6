package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/bundle/olmv1"
	"github.com/chartpilot/chartpilot/cmd/version"
	"github.com/chartpilot/chartpilot/rbac"
)

func newBundleCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Generate, check and build the operator's OLM bundle (CSV, CRDs, RBAC, metadata)",
		Long: `A registry+v1 bundle is what OLM installs: bundle/manifests (the
ClusterServiceVersion, the CRDs and the objects the CSV does not carry),
bundle/metadata/annotations.yaml and the scorecard tests' configuration.
chartpilot generates it from the project's config/ with kustomize built in,
computes its capability level from evidence, validates it with
operator-framework's validators and builds its image without a Docker daemon.`,
		Example: `  chartpilot bundle generate --version 0.1.0 --image controller=quay.io/me/op:v0.1.0
  chartpilot bundle validate ./bundle
  chartpilot bundle capabilities
  chartpilot bundle build --tag quay.io/me/op-bundle:v0.1.0 && chartpilot bundle push quay.io/me/op-bundle:v0.1.0`,
	}
	cmd.AddCommand(
		newBundleGenerateCommand(streams),
		newBundleValidateCommand(streams),
		newBundleCapabilitiesCommand(streams),
		newBundleRBACCommand(streams),
		newBundleBuildCommand(streams),
		newPushCommand(streams, "bundle", "bundle"),
	)
	return cmd
}

// imagesFlag parses --image name=ref pairs.
func imagesFlag(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		name, ref, ok := strings.Cut(p, "=")
		if !ok || name == "" || ref == "" {
			return nil, fmt.Errorf("--image %q: want NAME=IMAGE, e.g. controller=quay.io/me/op:v0.1.0", p)
		}
		out[name] = ref
	}
	return out, nil
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH, the reproducible-builds
// convention for a fixed build time.
func sourceDateEpoch() (*time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds: %w", s, err)
	}
	t := time.Unix(n, 0).UTC()
	return &t, nil
}

// bundleGenerateOptions are bundle generate's flags and arguments.
type bundleGenerateOptions struct {
	bundle.GenerateOptions
	streams genericiooptions.IOStreams
	images  []string
	output  *enumFlag
}

func newBundleGenerateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &bundleGenerateOptions{streams: streams, output: outputFlag()}
	opts := &o.GenerateOptions
	cmd := &cobra.Command{
		Use:   "generate [PROJECT_DIR]",
		Short: "Write bundle/ and bundle.Dockerfile from config/ (what `make bundle` runs)",
		Long: `Builds config/manifests with kustomize and writes the bundle: the CSV (its
base is config/manifests/bases/<project>.clusterserviceversion.yaml, created
with defaults on the first run), with the manager Deployment as install
strategy, permissions and clusterPermissions from the RBAC bound to its
ServiceAccount, the owned CRDs with the kinds their charts create and
descriptors from their schemas, alm-examples from config/samples,
WATCH_NAMESPACE wired to the OperatorGroup's namespaces, relatedImages (every
image reference in the charts' renders: pod specs, args, env, ConfigMap data,
fields of the objects they create; each listed with where it was found), and the
capability level computed from evidence (see ` + "`chartpilot bundle capabilities`" + `).

The same input gives byte-identical output: createdAt is kept when nothing else
changed, or fixed by SOURCE_DATE_EPOCH. The bundle directory is replaced
atomically.`,
		Example: `  chartpilot bundle generate --version 0.1.0 --image controller=quay.io/me/op:v0.1.0
  chartpilot bundle generate --version 0.2.0 --channels stable --from-catalog catalog
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) chartpilot bundle generate --version 0.2.0`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Version, "version", "", "the operator's semantic version, e.g. 0.1.0 (required)")
	fl.StringSliceVar(&opts.Channels, "channels", nil, "the bundle's channels (default: the existing bundle's, else alpha)")
	fl.StringVar(&opts.DefaultChannel, "default-channel", "", "the package's default channel (default: the existing bundle's, else the only channel)")
	fl.StringVar(&opts.Package, "package", "", "the package name (default: the project's name)")
	fl.StringArrayVar(&o.images, "image", nil, "replace a container image by name, NAME=IMAGE (e.g. controller=quay.io/me/op:v0.1.0), also where an images entry of config/ renamed NAME; repeatable")
	fl.StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version the charts are rendered for")
	fl.StringVar(&opts.OutputDir, "output-dir", bundle.DefaultOutputDir, "the bundle directory, relative to PROJECT_DIR")
	fl.StringVar(&opts.FromCatalog, "from-catalog", "", "a file-based catalog: replace the newest older version of the package in it and skip all older ones")
	fl.StringVar(&opts.Replaces, "replaces", "", "the CSV this one replaces (wins over --from-catalog)")
	fl.BoolVar(&opts.UseImageDigests, "use-image-digests", false, "pin every image to its digest, resolved against its registry")
	fl.StringVar(&opts.ScorecardResults, "scorecard-results", "", "scorecard results (JSON TestList) to prove capability levels with")
	fl.BoolVar(&opts.ForceCapabilities, "force-capabilities", false, "keep a capability level the base CSV declares even when the evidence does not prove it")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml")
	_ = cmd.MarkFlagRequired("version")
	return cmd
}

func (o *bundleGenerateOptions) complete(_ *cobra.Command, args []string) (err error) {
	if len(args) == 1 {
		o.Dir = args[0]
	}
	if o.Images, err = imagesFlag(o.images); err != nil {
		return err
	}
	if o.CreatedAt, err = sourceDateEpoch(); err != nil {
		return err
	}
	o.Builder = version.Builder()
	o.Out = o.streams.ErrOut
	return nil
}

func (o *bundleGenerateOptions) run(ctx context.Context) error {
	res, err := bundle.Generate(ctx, o.GenerateOptions)
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		verb := "wrote"
		if res.Unchanged {
			verb = "unchanged:"
		}
		fmt.Fprintf(w, "%s bundle %s: %s (package %s, channels %s", verb, res.Dir, res.CSV, res.Package, strings.Join(res.Channels, ","))
		if res.DefaultChannel != "" {
			fmt.Fprintf(w, ", default %s", res.DefaultChannel)
		}
		fmt.Fprintf(w, "), capabilities %q\n", res.Capabilities)
		if res.Replaces != "" || res.SkipRange != "" {
			fmt.Fprintf(w, "  upgrades from: replaces %q, skipRange %q\n", res.Replaces, res.SkipRange)
		}
		if len(res.Images) > 0 {
			fmt.Fprintf(w, "  relatedImages found in the charts' renders (%d):\n", len(res.Images))
			for _, img := range res.Images {
				fmt.Fprintf(w, "    %s\n", img)
			}
		}
		return nil
	})
}

// bundleValidateOptions are bundle validate's flags and arguments.
type bundleValidateOptions struct {
	bundle.ValidateOptions
	streams  genericiooptions.IOStreams
	optional []string
	output   *enumFlag
}

func newBundleValidateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &bundleValidateOptions{streams: streams, output: newEnumFlag("text", "text", "json")}
	opts := &o.ValidateOptions
	cmd := &cobra.Command{
		Use:   "validate [BUNDLE_DIR]",
		Short: "Check a bundle with every validator of operator-framework/api; exit 1 on errors",
		Long: `Runs operator-framework/api's validators on a bundle directory (default
./bundle): the bundle format, the CSV, the CRDs, the objects, and the deprecated
and removed APIs for --k8s-version; --select-optional suite=operatorhub adds
OperatorHub's metadata checks, suite=good-practices the good practices,
suite=all both. Each error and warning names
the bundle file and field.

The charts are not in the bundle but in the operator image: with --project
(by default the bundle directory's parent when it holds watches.yaml), the
CRDs under each chart's crds/ are checked too, as init and generate do.

With --previous (the bundle directory or image this one upgrades), the CRDs
are compared with the previous bundle's by OLM v1's upgrade-safety rules: a
removed field, a changed type, a narrowed enum, a new required field, a
changed default, a tightened bound, a changed scope or a removed stored
version is an error naming the field, why it breaks existing CRs and what to
do instead; --allow-unsafe-api-changes makes them warnings.

It also says whether OLM v1 (operator-controller ` + olmv1.OperatorControllerVersion + `) installs the bundle:
each reason it refuses one (no AllNamespaces install mode, webhooks, owned
APIServices, dependencies, a kind it does not install, subdirectories) is a
warning with its fix, an error with --olm-v1.`,
		Example: `  chartpilot bundle validate ./bundle
  chartpilot bundle validate ./bundle --previous quay.io/me/op-bundle:v0.1.0
  chartpilot bundle validate ./bundle --select-optional suite=operatorhub -o json
  chartpilot bundle validate ./bundle --olm-v1`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version deprecated and removed APIs are checked against")
	fl.StringVar(&opts.Project, "project", "", "the project the bundle was generated from, whose charts' crds/ are checked too (default: the bundle directory's parent when it holds watches.yaml; \"\" for none)")
	fl.StringVar(&opts.Previous, "previous", "", "the bundle (directory or image) this one upgrades: unsafe CRD changes since it are errors")
	fl.BoolVar(&opts.AllowUnsafeAPIChanges, "allow-unsafe-api-changes", false, "report unsafe CRD changes since --previous as warnings")
	fl.BoolVar(&opts.OLMv1, "olm-v1", false, "the reasons OLM v1 (operator-controller "+olmv1.OperatorControllerVersion+") refuses the bundle are errors, not warnings")
	fl.StringArrayVar(&o.optional, "select-optional", nil, "optional validators: suite="+strings.Join(bundle.Suites, "|")+"; repeatable")
	fl.VarP(o.output, "output", "o", "output format: text or json")
	return cmd
}

func (o *bundleValidateOptions) complete(cmd *cobra.Command, args []string) error {
	o.Dir = bundle.DefaultOutputDir
	if len(args) == 1 {
		o.Dir = args[0]
	}
	if !cmd.Flags().Changed("project") {
		o.Project = bundle.ProjectOf(o.Dir)
	}
	for _, sel := range o.optional {
		suite, ok := strings.CutPrefix(sel, "suite=")
		if !ok {
			return fmt.Errorf("--select-optional %q: want suite=NAME (one of %s)", sel, strings.Join(bundle.Suites, ", "))
		}
		o.Suites = append(o.Suites, suite)
	}
	return nil
}

func (o *bundleValidateOptions) run(context.Context) error {
	rep, err := bundle.Validate(o.ValidateOptions)
	if rep == nil {
		return err
	}
	if perr := printData(o.streams.Out, o.output.String(), rep, rep.WriteText); perr != nil {
		return perr
	}
	if errors.Is(err, bundle.ErrInvalid) {
		return fmt.Errorf("bundle %s: %d validation error(s)", o.Dir, rep.Errors())
	}
	return err
}

// bundleCapabilitiesOptions are bundle capabilities' flags and arguments.
type bundleCapabilitiesOptions struct {
	bundle.CapabilitiesOptions
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newBundleCapabilitiesCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &bundleCapabilitiesOptions{streams: streams, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "capabilities [PROJECT_DIR]",
		Short: "Print the computed capability level: each level's criteria, met or not, and why",
		Long: `Computes the operator's capability level from evidence: what the chartpilot
runtime does for the operator (its watches), what the generated bundle declares
(upgrade path, metrics Service, ServiceMonitor, PrometheusRule) and what
scorecard proved (--scorecard-results: chartpilot-install, -upgrade,
-uninstall and -rbac). A level counts when it and every level below are met.
The criteria are in docs/capabilities.md.`,
		Example: `  chartpilot bundle capabilities
  chartpilot scorecard bundle --results scorecard.json; chartpilot bundle capabilities --scorecard-results scorecard.json
  chartpilot bundle capabilities my-operator -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.BundleDir, "bundle-dir", bundle.DefaultOutputDir, "the generated bundle, relative to PROJECT_DIR")
	fl.StringVar(&o.ScorecardResults, "scorecard-results", "", "scorecard results (JSON TestList) to prove levels with")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *bundleCapabilitiesOptions) complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Dir = args[0]
	}
	return nil
}

func (o *bundleCapabilitiesOptions) run(context.Context) error {
	a, err := bundle.AssessProject(o.CapabilitiesOptions)
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), a, a.WriteText)
}
