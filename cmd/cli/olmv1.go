package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
)

// newOLMv1Command is `olm v1`: OLM v1's ClusterCatalogs and
// ClusterExtensions, as `kubectl operator olmv1` names its flags.
func newOLMv1Command(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	// The installer's rules are derived from the bundle unless the user
	// binds a ClusterRole of their own (--installer-cluster-role) or brings
	// the ServiceAccount (--use-existing-service-account).
	deriveRules := extension.DerivedRules
	cmd := &cobra.Command{
		Use:     "v1",
		Aliases: []string{"olmv1"},
		Short:   "Install an operator through OLM v1 (ClusterCatalog, ClusterExtension), see where it stands, upgrade it, remove it",
		Long: `OLM v1 (catalogd and operator-controller, olm.operatorframework.io/v1) installs
a package of a ClusterCatalog as a ClusterExtension. Before v1.11 it acts as an
installer ServiceAccount that must hold the RBAC to create every object of the
bundle; from v1.11 it installs as its own cluster-admin ServiceAccount and
ignores spec.serviceAccount. Each command reads which from the cluster's
ClusterExtension CRD.

install creates the ClusterCatalog of a catalog image, the namespace, the
installer ServiceAccount with its RBAC where the cluster uses one, and the
ClusterExtension (server-side apply: running it again changes nothing); status explains each condition and
names what keeps it from being installed, with the fix; upgrade changes the
version range, the channels or the catalog image; uninstall removes the
ClusterExtension and waits until nothing of it is left, then removes what
install created. The local cluster runs OLM v1 with cluster up --olm=v1.`,
		Example: `  chartpilot olm v1 install demo-operator -n demo --catalog-image 127.0.0.1:5000/demo-catalog:v1 --wait
  chartpilot olm v1 status demo-operator`,
	}
	cmd.AddCommand(
		newOLMv1InstallCommand(streams, configFlags, deriveRules),
		newOLMv1StatusCommand(streams, configFlags),
		newOLMv1UpgradeCommand(streams, configFlags, deriveRules),
		newOLMv1UninstallCommand(streams, configFlags),
	)
	return cmd
}

// olmv1Client is a client of the cluster that knows the core types.
func olmv1Client(configFlags *genericclioptions.ConfigFlags) (client.Client, error) {
	cfg, err := runcmd.KubeConfig(configFlags)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	return olm.NewClient(cfg)
}

// installV1Options are olm v1 install's flags and arguments.
type installV1Options struct {
	extension.InstallOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
	policy      *enumFlag
	crdSafety   *enumFlag
	dryRun      bool
	wait        bool
	timeout     time.Duration
}

func newOLMv1InstallCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags, derive extension.InstallerRulesFunc) *cobra.Command {
	o := &installV1Options{
		streams: streams, configFlags: configFlags, output: outputFlag(),
		policy:    newEnumFlag("", extension.UpgradeCatalogProvided, extension.UpgradeSelfCertified),
		crdSafety: newEnumFlag("", extension.CRDSafetyStrict, extension.CRDSafetyNone),
	}
	o.InstallerRules = derive
	cmd := &cobra.Command{
		Use:   "install PACKAGE",
		Short: "Create the ClusterCatalog, namespace, installer ServiceAccount with its RBAC and the ClusterExtension that install PACKAGE (or print them with --dry-run)",
		Long: `Creates, with server-side apply: the ClusterCatalog of --catalog-image (then
the only catalog the extension searches; without it, the cluster's catalogs
matching --catalog-selector), the namespace -n when missing, the installer
ServiceAccount with the least-privilege rules derived from the bundle it will
install (what chartpilot bundle rbac --olm-v1 prints; --installer-cluster-role
binds an existing ClusterRole instead; --use-existing-service-account creates
no ServiceAccount and no RBAC), and the ClusterExtension. A cluster whose
OLM v1 ignores spec.serviceAccount (v1.11 and later) gets no ServiceAccount
and no RBAC, and install says so.

--watch-namespace sets the ClusterExtension's config.inline.watchNamespace: the
operator watches that namespace alone (SingleNamespace; OwnNamespace when it
is -n). The bundle's CSV decides what is offered: one without AllNamespaces
watches its own namespace unless told. The cluster's OLM v1 must take
spec.config (v1.4 and later, experimental CRDs, operator-controller with
--feature-gates=SingleOwnNamespaceInstallSupport=true).

--version takes a version or a range ("0.2.x", ">=0.1.0 <0.3.0"); with
--channels, only bundles of those channels count. --dry-run prints the objects
for kubectl create -f without reaching the cluster, for an OLM v1 that installs as
an installer ServiceAccount.`,
		Example: `  chartpilot olm v1 install demo-operator -n demo --catalog-image 127.0.0.1:5000/demo-catalog:v1 --wait
  chartpilot olm v1 install demo-operator -n demo --catalog-image 127.0.0.1:5000/demo-catalog:v1 --version '>=0.1.0 <0.3.0' --dry-run > demo.yaml
  chartpilot olm v1 install demo-operator -n demo --catalog-image 127.0.0.1:5000/demo-catalog:v1 --installer-cluster-role cluster-admin`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Name, "extension-name", "", "the ClusterExtension's name (default PACKAGE)")
	fl.StringVar(&o.CatalogImage, "catalog-image", "", "a catalog image to create a ClusterCatalog of, the only catalog the extension then searches")
	fl.StringVar(&o.CatalogName, "catalog-name", "", "the ClusterCatalog's name (default NAME-catalog)")
	fl.StringVarP(&o.CatalogSelector, "catalog-selector", "l", "", "without --catalog-image: a label selector of the ClusterCatalogs to search (default all)")
	fl.IntVar(&o.PollIntervalMinutes, "source-poll-interval-minutes", extension.DefaultPollIntervalMinutes, "how often catalogd looks for a new digest of a catalog image given by tag; -1 never")
	fl.StringSliceVarP(&o.Channels, "channels", "c", nil, "only bundles of these channels (default any)")
	fl.StringVar(&o.Version, "version", "", `a version or version range, e.g. 0.2.x or ">=0.1.0 <0.3.0" (default any)`)
	fl.Var(o.policy, "upgrade-constraint-policy", "CatalogProvided (upgrade along the catalog's edges, the default) or SelfCertified (any version, downgrades too)")
	fl.Var(o.crdSafety, "crd-upgrade-safety-enforcement", "Strict (refuse CRD changes that break existing CRs, the default) or None")
	fl.StringVarP(&o.ServiceAccount, "service-account", "s", "", "the installer ServiceAccount (default NAME-installer)")
	fl.BoolVar(&o.ExistingServiceAccount, "use-existing-service-account", false, "the installer ServiceAccount exists with its RBAC: create neither")
	fl.StringVar(&o.InstallerClusterRole, "installer-cluster-role", "", "bind this existing ClusterRole (e.g. cluster-admin) to the installer ServiceAccount")
	fl.StringVar(&o.WatchNamespace, "watch-namespace", "", "the one namespace the operator watches (config.inline.watchNamespace); default all, or -n when the CSV supports no AllNamespaces")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the objects instead of creating them (the cluster is not contacted)")
	fl.BoolVar(&o.wait, "wait", false, "wait until the ClusterExtension is installed, printing progress")
	fl.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml (with --dry-run: the objects)")
	return cmd
}

func (o *installV1Options) complete(_ *cobra.Command, args []string) error {
	ns, err := namespaceOf(o.configFlags)
	if err != nil {
		return err
	}
	o.Package, o.Namespace = args[0], ns
	o.UpgradeConstraintPolicy, o.CRDUpgradeSafety = o.policy.String(), o.crdSafety.String()
	if o.PollIntervalMinutes == 0 {
		o.PollIntervalMinutes = -1 // 0 says never, as kubectl operator's flag does
	}
	return nil
}

func (o *installV1Options) validate() error {
	if o.dryRun && o.wait {
		return errors.New("--wait waits for the install; it does not go with --dry-run")
	}
	return nil
}

func (o *installV1Options) run(ctx context.Context) error {
	if o.dryRun {
		plan, err := extension.Prepare(ctx, nil, o.InstallOptions)
		if err != nil {
			return err
		}
		objs, err := plan.Objects()
		if err != nil {
			return err
		}
		return printObjects(o.streams.Out, o.output.String(), objs)
	}
	c, err := olmv1Client(o.configFlags)
	if err != nil {
		return err
	}
	res, err := extension.Install(ctx, c, o.InstallOptions)
	if err != nil {
		return err
	}
	if err := printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, obj := range res.Objects {
			fmt.Fprintln(w, obj)
		}
		if res.Bundle != nil {
			fmt.Fprintf(w, "resolved bundle %s\n", res.Bundle.Name)
		}
		for _, n := range res.Notes {
			fmt.Fprintln(w, "note:", n)
		}
		return nil
	}); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	name := o.Name
	if name == "" {
		name = o.Package
	}
	return waitV1(ctx, c, o.streams.Out, o.output.String() == "text", name, "", o.timeout)
}

// waitV1 waits for the extension, printing progress in text output.
func waitV1(ctx context.Context, c client.Client, out io.Writer, text bool, name, version string, timeout time.Duration) error {
	began := time.Now()
	r, err := extension.Wait(ctx, c, name, extension.WaitOptions{Timeout: timeout, Version: version, Progress: func(r *extension.Report) {
		if text {
			fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(began).Seconds(), r.Summary())
		}
	}})
	if err != nil {
		if r != nil && text {
			_ = r.WriteText(out)
		}
		return err
	}
	if text {
		fmt.Fprintf(out, "installed %s %s (%.1fs)\n", r.Bundle.Name, r.Bundle.Version, time.Since(began).Seconds())
	}
	return nil
}

// statusV1Options are olm v1 status's flags and arguments.
type statusV1Options struct {
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
	name        string
}

func newOLMv1StatusCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &statusV1Options{streams: streams, configFlags: configFlags, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Explain the conditions of ClusterExtension NAME and its catalogs, and name what keeps it from being installed, with the fix",
		Long: `Reads the ClusterExtension, the ClusterCatalogs it selects, its install
namespace and its installer ServiceAccount, says what each condition means,
and names each problem with its fix: the ServiceAccount or namespace missing,
no catalog or a catalog image catalogd cannot pull, a package the catalogs do
not have, a version range or channels no bundle fits, no upgrade edge from
the installed version, a bundle OLM v1 cannot install (no AllNamespaces install
mode, webhooks, APIServices, dependencies), an upgrade the CRD upgrade safety
check refuses, a rule the installer lacks. Exits non-zero unless installed.`,
		Example: `  chartpilot olm v1 status demo-operator`,
		Args:    cobra.ExactArgs(1),
		RunE:    runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *statusV1Options) complete(_ *cobra.Command, args []string) error {
	o.name = args[0]
	return nil
}

func (o *statusV1Options) run(ctx context.Context) error {
	c, err := olmv1Client(o.configFlags)
	if err != nil {
		return err
	}
	obs, err := extension.Observe(ctx, c, o.name)
	if err != nil {
		return err
	}
	r := obs.Report()
	if err := printData(o.streams.Out, o.output.String(), r, r.WriteText); err != nil {
		return err
	}
	if !r.Installed {
		return fmt.Errorf("ClusterExtension %s is not installed", o.name)
	}
	return nil
}

// upgradeV1Options are olm v1 upgrade's flags and arguments.
type upgradeV1Options struct {
	extension.UpgradeOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
	policy      *enumFlag
	crdSafety   *enumFlag
	version     string
	channels    []string
	wait        bool
	timeout     time.Duration
}

func newOLMv1UpgradeCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags, derive extension.InstallerRulesFunc) *cobra.Command {
	o := &upgradeV1Options{
		streams: streams, configFlags: configFlags, output: outputFlag(),
		policy:    newEnumFlag("", extension.UpgradeCatalogProvided, extension.UpgradeSelfCertified),
		crdSafety: newEnumFlag("", extension.CRDSafetyStrict, extension.CRDSafetyNone),
	}
	o.InstallerRules = derive
	cmd := &cobra.Command{
		Use:   "upgrade NAME",
		Short: "Move ClusterExtension NAME to a new version range, channels or catalog image",
		Long: `Changes what the ClusterExtension installs: --version (a version or range;
"" removes it), --channels, or --catalog-image, a new image for the
ClusterCatalog install created for it. Flags not given keep their value.
Resolves the bundle OLM v1 will move to from the catalog, and with --wait
waits until it is installed.`,
		Example: `  chartpilot olm v1 upgrade demo-operator --catalog-image 127.0.0.1:5000/demo-catalog:v2 --wait
  chartpilot olm v1 upgrade demo-operator --version 0.2.x --wait`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.version, "version", "", `the new version or version range ("" removes it)`)
	fl.StringSliceVarP(&o.channels, "channels", "c", nil, "the new channels (--channels= removes them)")
	fl.StringVar(&o.CatalogImage, "catalog-image", "", "a new image for the extension's ClusterCatalog")
	fl.Var(o.policy, "upgrade-constraint-policy", "CatalogProvided or SelfCertified (default: unchanged)")
	fl.Var(o.crdSafety, "crd-upgrade-safety-enforcement", "Strict or None (default: unchanged)")
	fl.BoolVar(&o.wait, "wait", false, "wait until the new bundle is installed, printing progress")
	fl.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *upgradeV1Options) complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	if cmd.Flags().Changed("version") {
		o.Version = &o.version
	}
	if cmd.Flags().Changed("channels") {
		o.Channels = &o.channels
	}
	o.UpgradeConstraintPolicy, o.CRDUpgradeSafety = o.policy.String(), o.crdSafety.String()
	return nil
}

func (o *upgradeV1Options) validate() error {
	if o.Version == nil && o.Channels == nil && o.CatalogImage == "" && o.UpgradeConstraintPolicy == "" && o.CRDUpgradeSafety == "" {
		return errors.New("nothing to change: give --version, --channels, --catalog-image, --upgrade-constraint-policy or --crd-upgrade-safety-enforcement")
	}
	return nil
}

func (o *upgradeV1Options) run(ctx context.Context) error {
	c, err := olmv1Client(o.configFlags)
	if err != nil {
		return err
	}
	res, err := extension.Upgrade(ctx, c, o.UpgradeOptions)
	if err != nil {
		return err
	}
	text := o.output.String() == "text"
	if err := printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, obj := range res.Objects {
			fmt.Fprintln(w, obj)
		}
		switch {
		case res.To != nil && res.From != nil:
			fmt.Fprintf(w, "upgrading from %s to %s\n", res.From.Version, res.To.Version)
		case res.To != nil:
			fmt.Fprintf(w, "installing %s\n", res.To.Version)
		case res.Note != "":
			fmt.Fprintln(w, "note:", res.Note)
		}
		return nil
	}); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	version := ""
	if res.To != nil {
		version = res.To.Version
	}
	return waitV1(ctx, c, o.streams.Out, text, o.Name, version, o.timeout)
}

// uninstallV1Options are olm v1 uninstall's flags and arguments.
type uninstallV1Options struct {
	extension.UninstallOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
}

func newOLMv1UninstallCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &uninstallV1Options{streams: streams, configFlags: configFlags, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "uninstall NAME",
		Short: "Remove ClusterExtension NAME and wait until nothing of it is left, the installer's RBAC included",
		Long: `Deletes the ClusterExtension, waits until every object operator-controller
installed for it (and its release records) is collected, then deletes what
install created for it: the installer's RoleBinding, Role, ClusterRoleBinding,
ClusterRole and ServiceAccount, its ClusterCatalog (unless another
ClusterExtension selects it) and its namespace (only when install created it).
The bundle's CRDs go with it, and with them every custom resource of theirs.`,
		Example: `  chartpilot olm v1 uninstall demo-operator`,
		Args:    cobra.ExactArgs(1),
		RunE:    runOptions(o),
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long to wait for each deletion")
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *uninstallV1Options) complete(_ *cobra.Command, args []string) error {
	cfg, err := runcmd.KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	o.Name, o.Config = args[0], cfg
	if o.output.String() == "text" {
		o.Out = o.streams.Out
	}
	return nil
}

func (o *uninstallV1Options) run(ctx context.Context) error {
	c, err := olm.NewClient(o.Config)
	if err != nil {
		return err
	}
	res, err := extension.Uninstall(ctx, c, o.UninstallOptions)
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, n := range res.Notes {
			fmt.Fprintln(w, "note:", n)
		}
		_, err := fmt.Fprintf(w, "uninstalled %s: nothing of it is left\n", o.Name)
		return err
	})
}
