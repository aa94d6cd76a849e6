package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm"
)

// doctorOptions are doctor's flags.
type doctorOptions struct {
	doctor.Options
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
}

func newDoctorCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &doctorOptions{streams: streams, configFlags: configFlags, output: newEnumFlag("text", "text", "json")}
	opts := &o.Options
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Run the troubleshooting checklist of a Helm operator: CRD, Deployment, custom resources, RBAC, APIs, OLM",
		Long: `Checks, each with pass, warn or fail and a one-line fix:
  - the CRD of the kind is installed, Established and served by discovery;
  - the operator Deployment is Available and its pods Running and Ready;
  - each custom resource's last reconcile (Deployed, ReleaseFailed,
    Irreconcilable, Ready conditions);
  - RBAC: every permission the chart needs (derived from the charts of
    --watches-file) asked of the API server as the operator's ServiceAccount
    (SubjectAccessReview), naming the exact missing rule;
  - APIs the chart renders that the cluster's Kubernetes version removed or
    deprecated;
  - OLM: the OperatorGroup, CatalogSource connection, Subscription state,
    InstallPlan and CSV phases (with --package, or found from the CRD);
  - OLM v1: the ClusterExtension (--extension, or the one that installs
    --package or the CRD), its ClusterCatalogs and installer ServiceAccount,
    each problem olm v1 status names with its fix; a permission the
    installer lacked is named as the API server refused it to
    operator-controller, and confirmed by a SubjectAccessReview; then the
    CRDs, Deployments and custom resources it installed.
Exits non-zero when a check fails.`,
		Example: `  chartpilot doctor --package demo-operator -n demo --watches-file watches.yaml
  chartpilot doctor --kind Widget.demo.example.com -n demo --watches-file watches.yaml --service-account demo/demo-operator
  chartpilot doctor --extension demo-operator --watches-file watches.yaml`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	fl := cmd.Flags()
	fl.StringVar(&opts.Kind, "kind", "", "the custom resource kind as KIND.GROUP, e.g. Widget.demo.example.com")
	fl.StringVar(&opts.Package, "package", "", "the OLM package installed in the namespace (by a Subscription, else by a ClusterExtension)")
	fl.StringVar(&opts.Extension, "extension", "", "the OLM v1 ClusterExtension that installs the operator")
	fl.StringVar(&opts.WatchesFile, "watches-file", "", "the operator's watches.yaml: its charts give the permissions and APIs to check")
	fl.StringVar(&opts.ServiceAccount, "service-account", "", "the operator's ServiceAccount as NAMESPACE/NAME (default: the CSV's)")
	fl.StringSliceVar(&opts.WatchNamespaces, "watch-namespaces", nil, "namespaces the operator watches, where namespaced permissions are checked and custom resources looked for (default: the OperatorGroup's, else -n)")
	fl.StringVar(&opts.KubeVersion, "kube-version", "", "the Kubernetes version to check APIs against (default: the cluster's)")
	fl.VarP(o.output, "output", "o", "output format: text or json")
	return cmd
}

func (o *doctorOptions) complete(*cobra.Command, []string) error {
	cfg, err := runcmd.KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	o.Config = cfg
	if *o.configFlags.Namespace != "" {
		o.Namespace = *o.configFlags.Namespace
	} else if o.Package != "" {
		if o.Namespace, err = namespaceOf(o.configFlags); err != nil {
			return err
		}
	}
	return nil
}

func (o *doctorOptions) run(ctx context.Context) error {
	rep, err := doctor.Run(ctx, o.Options)
	if err != nil {
		return err
	}
	if err := printData(o.streams.Out, o.output.String(), rep, func(w io.Writer) error {
		if err := olm.WriteFindings(w, rep.Checks); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d passed, %d warnings, %d failed\n", rep.Count(doctor.Pass), rep.Count(doctor.Warn), rep.Count(doctor.Fail))
		return err
	}); err != nil {
		return err
	}
	if rep.Failed() {
		return fmt.Errorf("%d checks failed", rep.Count(doctor.Fail))
	}
	return nil
}
