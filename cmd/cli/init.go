package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"

	"helm.sh/helm/v4/pkg/cli/values"
)

// apiFlags adds the flags naming a chart and the kind it becomes.
func apiFlags(cmd *cobra.Command, o *scaffold.APIOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.Chart, "chart", "", "the Helm chart: a chart directory or a packaged .tgz (file:// dependencies are resolved and vendored), an oci://HOST/PATH/NAME[:TAG] reference, or its name with --chart-repo")
	fl.StringVar(&o.ChartRepo, "chart-repo", "", "URL of a Helm chart repository to pull --chart from")
	fl.StringVar(&o.ChartVersion, "chart-version", "", "version or semver constraint of the chart to pull from --chart-repo or an OCI registry (default: the latest)")
	fl.BoolVar(&o.PlainHTTP, "plain-http", false, "reach the OCI registry of an oci:// chart over HTTP instead of HTTPS (credentials: helm registry login)")
	fl.StringVar(&o.Group, "group", scaffold.DefaultGroup, "the API group's first label; the group is <group>.<domain>")
	fl.StringVar(&o.Version, "version", scaffold.DefaultVersion, "the API version")
	fl.StringVar(&o.Kind, "kind", "", "the custom resource's kind (default: the chart's name in CamelCase)")
}

// initOptions are init's flags and arguments.
type initOptions struct {
	scaffold.Options
	streams   genericiooptions.IOStreams
	discovery discoveryFlags
	vals      values.Options
}

func newInitCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &initOptions{streams: streams}
	opts := &o.Options
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold a Helm operator project from a chart, with least-privilege RBAC and a CRD schema",
		Long: `init writes a Helm operator project in the layout operator-sdk's helm plugin
writes (PROJECT, watches.yaml, helm-charts/, config/, Dockerfile, and a Makefile
including operator.mk, which holds the targets) into DIR (default: the current
directory), and derives from the chart what operator-sdk leaves to you:
config/rbac/role.yaml with exactly the permissions a Helm install, upgrade and
uninstall of the chart needs (value-gated kinds included, each rule commented),
and a CRD whose spec schema comes from values.schema.json or values.yaml.

The chart's apiVersions are checked against --k8s-version: removed APIs fail the
init, deprecated ones are warnings. A failed init leaves nothing behind; a
non-empty DIR is refused unless --force.

--values and --set give the chart values besides its values.yaml, as helm
install does (a chart that requires a value needs them): the chart is rendered
with them (RBAC, images), the sample CR holds them and the CRD accepts them.
They are recorded in helm-values/<group>_<version>_<kind>.yaml, which
generate reads.`,
		Example: `  chartpilot init --domain example.com --chart ./charts/webapp
  chartpilot init my-operator --chart webapp-0.1.0.tgz --group web --kind WebApp
  chartpilot init my-operator --chart webapp --chart-repo https://charts.example.com --chart-version 0.1.0
  chartpilot init my-operator --chart oci://registry.example.com/charts/webapp --chart-version '^0.1'
  chartpilot init my-operator --chart ./charts/webapp --values prod.yaml --set ui.message=hello`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	apiFlags(cmd, &opts.APIOptions)
	_ = cmd.MarkFlagRequired("chart")
	fl := cmd.Flags()
	fl.StringVar(&opts.Domain, "domain", scaffold.DefaultDomain, "the domain of the project's API groups")
	fl.StringVar(&opts.ProjectName, "project-name", "", "the project's name (default: DIR's base name)")
	fl.BoolVar(&opts.Force, "force", false, "write into a non-empty directory, replacing the generated files")
	fl.StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version the chart's APIs are checked against")
	o.discovery.add(cmd)
	valuesFlags(cmd, &o.vals)
	warningsFileFlag(cmd, &opts.WarningsFile)
	return cmd
}

func (o *initOptions) complete(_ *cobra.Command, args []string) (err error) {
	o.Dir = "."
	if len(args) == 1 {
		o.Dir = args[0]
	}
	o.Out = o.streams.ErrOut
	if o.Values, err = givenValues(&o.vals); err != nil {
		return err
	}
	o.Config, err = o.discovery.config()
	return err
}

func (o *initOptions) run(context.Context) error {
	if err := scaffold.Init(o.Options); err != nil {
		return valuesHint(err)
	}
	_, err := fmt.Fprintf(o.streams.Out, "Wrote the project to %s. Next: make install run (or make bundle).\n", dirName(o.Dir))
	return err
}

func newCreateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "create",
		Short:   "Add to an existing project",
		Example: `  chartpilot create api --chart ./charts/cache --kind Cache`,
	}
	cmd.AddCommand(newCreateAPICommand(streams))
	return cmd
}

// createAPIOptions are create api's flags.
type createAPIOptions struct {
	scaffold.CreateAPIOptions
	streams genericiooptions.IOStreams
	vals    values.Options
	// newVersion: --version was given, so without --chart a version is
	// added to a kind the project serves.
	newVersion bool
}

func newCreateAPICommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &createAPIOptions{streams: streams}
	opts := &o.CreateAPIOptions
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Add a kind served by another chart, or a new API version of a kind, to the project in the current directory",
		Long: `With --chart, create api vendors another chart into helm-charts/, adds its
CRD, sample, watches.yaml entry and PROJECT resource, and regenerates
config/rbac/role.yaml for all of the project's charts.

Without --chart, it adds API version --version to a kind the project serves
(--kind, default the project's only one), for when the chart's values change:
the CRD keeps its versions, served as they were, and gains the new one as its
storage version, its schema from the chart. There is no conversion webhook in
a Helm operator: the API server converts between versions by changing
apiVersion alone (conversion None), so the new schema must read every CR of
the old versions as they do; an incompatible one (a field removed, a type
changed...) is refused with each path. The one watches.yaml entry of the kind
moves to the new version (the API server serves every CR in every served
version; a watch per version would reconcile each CR twice), PROJECT lists it,
and config/samples gets a sample of it. The operator then rewrites every CR in
the new version at start-up when it watches all namespaces, and trims the
CRD's status.storedVersions (otherwise: chartpilot olm migrate), so that a
later release can drop the old version: remove it from PROJECT and run
chartpilot generate.`,
		Example: `  chartpilot create api --chart ./charts/cache --kind Cache
  chartpilot create api --version v1beta1 --kind Cache`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	apiFlags(cmd, &opts.APIOptions)
	cmd.Flags().StringVar(&opts.Dir, "project-dir", ".", "the project's directory")
	cmd.Flags().StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version the chart's APIs are checked against")
	valuesFlags(cmd, &o.vals)
	warningsFileFlag(cmd, &opts.WarningsFile)
	return cmd
}

func (o *createAPIOptions) complete(cmd *cobra.Command, _ []string) (err error) {
	o.Out = o.streams.ErrOut
	o.newVersion = cmd.Flags().Changed("version")
	o.Values, err = givenValues(&o.vals)
	return err
}

func (o *createAPIOptions) validate() error {
	if o.Chart == "" && !o.newVersion {
		return errors.New("give --chart for a new kind, or --version for a new API version of a kind the project serves")
	}
	return nil
}

func (o *createAPIOptions) run(context.Context) error {
	if err := scaffold.CreateAPI(o.CreateAPIOptions); err != nil {
		return valuesHint(err)
	}
	if o.Chart == "" {
		_, err := fmt.Fprintf(o.streams.Out, "Added API version %s (the storage version) to the project in %s.\n", o.Version, dirName(o.Dir))
		return err
	}
	_, err := fmt.Fprintf(o.streams.Out, "Added the chart %s to the project in %s.\n", o.Chart, dirName(o.Dir))
	return err
}

// discoveryFlags are --discovery and the kubectl flags of the cluster it
// asks: --kubeconfig and --context.
type discoveryFlags struct {
	use  bool
	kube *genericclioptions.ConfigFlags
}

func (d *discoveryFlags) add(cmd *cobra.Command) {
	d.kube = runcmd.NewContextFlags()
	runcmd.AddKubeFlags(cmd.Flags(), d.kube)
	cmd.Flags().BoolVar(&d.use, "discovery", false, "resolve the charts' kinds through the discovery of the cluster --kubeconfig/--context point at (default: the built-in Kubernetes 1.36 API and the charts' CRDs)")
}

// config is the client configuration of the kubectl flags, or nil when
// discovery is off.
func (d *discoveryFlags) config() (*rest.Config, error) {
	if !d.use {
		return nil, nil
	}
	cfg, err := runcmd.KubeConfig(d.kube)
	if err != nil {
		return nil, fmt.Errorf("--discovery: %w", err)
	}
	return cfg, nil
}

// generateOptions are generate's flags.
type generateOptions struct {
	scaffold.GenerateOptions
	streams   genericiooptions.IOStreams
	discovery discoveryFlags
	vals      values.Options
}

func newGenerateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &generateOptions{streams: streams}
	opts := &o.GenerateOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Regenerate config/rbac/role.yaml and the CRDs from the project's charts",
		Long: `generate derives again what init derived from the charts under helm-charts/:
the least-privilege config/rbac/role.yaml for every chart in watches.yaml (with
its sample CR's values) and each CRD's schema under config/crd/bases. Run it
(make rbac) after changing a chart. Removed APIs fail it and change nothing.

Each chart is rendered with the values recorded in helm-values/ (given to init
or create api). --values and --set replace them for the chart of --kind (which
may be left out when the project has one kind), and are recorded in turn.`,
		Example: `  chartpilot generate                          # after editing a chart under helm-charts/ (make rbac)
  chartpilot generate --project-dir my-operator --set ui.message=hello
  chartpilot generate --kind Cache --values cache-prod.yaml
  chartpilot generate --discovery --kubeconfig ~/.kube/config   # kinds as the cluster serves them`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&opts.Dir, "project-dir", ".", "the project's directory")
	cmd.Flags().StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version the charts' APIs are checked against")
	cmd.Flags().StringVar(&opts.Kind, "kind", "", "the kind whose chart --values and --set are for (default: the project's only kind)")
	o.discovery.add(cmd)
	valuesFlags(cmd, &o.vals)
	warningsFileFlag(cmd, &opts.WarningsFile)
	return cmd
}

func (o *generateOptions) complete(*cobra.Command, []string) (err error) {
	o.Out = o.streams.ErrOut
	if o.Values, err = givenValues(&o.vals); err != nil {
		return err
	}
	o.Config, err = o.discovery.config()
	return err
}

func (o *generateOptions) run(context.Context) error {
	if err := scaffold.Generate(o.GenerateOptions); err != nil {
		return valuesHint(err)
	}
	_, err := fmt.Fprintf(o.streams.Out, "Regenerated config/rbac/role.yaml, role_all_namespaces.yaml and config/crd/bases in %s.\n", dirName(o.Dir))
	return err
}

// adoptOptions are adopt's flags and arguments.
type adoptOptions struct {
	scaffold.AdoptOptions
	streams   genericiooptions.IOStreams
	discovery discoveryFlags
	noDiff    bool
}

func newAdoptCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &adoptOptions{streams: streams}
	opts := &o.AdoptOptions
	cmd := &cobra.Command{
		Use:   "adopt [DIR]",
		Short: "Make an operator-sdk Helm project work with chartpilot, keeping your edits",
		Long: `adopt takes a project written by operator-sdk init --plugins helm (PROJECT,
watches.yaml, helm-charts/, config/, Makefile) in DIR (default: the current
directory) and adds what chartpilot derives: a least-privilege
config/rbac/role.yaml instead of operator-sdk's rules granting every verb, CRD
spec schemas from the charts' values, the Makefile's targets (run, install,
deploy, bundle, catalog-build...) running chartpilot while your variables and
other targets stay, and config/scorecard when absent.

Each rewritten file is saved under .chartpilot-backup/ first, and the diff is
printed; if a different backup is already there, adopt refuses and changes
nothing. Running adopt again on an adopted project changes nothing.`,
		Example: `  chartpilot adopt --dry-run
  chartpilot adopt ./my-operator`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print what would change and write nothing")
	fl.BoolVar(&o.noDiff, "no-diff", false, "list the changed files without their diffs")
	fl.StringVar(&opts.KubeVersion, "k8s-version", rbac.DefaultKubeVersion, "the Kubernetes version the charts' APIs are checked against")
	o.discovery.add(cmd)
	return cmd
}

func (o *adoptOptions) complete(_ *cobra.Command, args []string) (err error) {
	o.Dir = "."
	if len(args) == 1 {
		o.Dir = args[0]
	}
	o.Out = o.streams.ErrOut
	o.Config, err = o.discovery.config()
	return err
}

func (o *adoptOptions) run(context.Context) error {
	res, err := scaffold.Adopt(o.AdoptOptions)
	if err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(o.streams.Out, "Dry run: nothing written.")
	}
	return res.Write(o.streams.Out, !o.noDiff)
}

// dirName names a directory in a sentence: "." ended "in .." and read as
// the parent directory.
func dirName(dir string) string {
	if dir == "" || filepath.Clean(dir) == "." {
		return "the current directory"
	}
	return dir
}

// warningsFileFlag adds --warnings-file, where init, create api and
// generate list every warning with its fix.
func warningsFileFlag(cmd *cobra.Command, file *string) {
	cmd.Flags().StringVar(file, "warnings-file", "", "list every warning there, each with its fix; the screen shows a kind with more than three as one line (default "+scaffold.WarningsFile+" in the project)")
}
