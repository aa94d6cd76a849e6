package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/operator/watches"
	"github.com/chartpilot/chartpilot/rbac"
)

// Check is one item of the checklist: its name, pass/warn/fail, the object
// concerned, what was found and a one-line fix.
type Check = olm.Finding

// Severities of a Check.
const (
	Pass = olm.Pass
	Warn = olm.Warn
	Fail = olm.Fail
)

// Names of the checks Run makes besides olm.Diagnose's.
const (
	CheckCRD            = "CRD"
	CheckDeployment     = "Operator Deployment"
	CheckPods           = olm.CheckOperatorPods
	CheckCR             = "Custom resource"
	CheckRBAC           = "RBAC"
	CheckRemovedAPIs    = "Removed APIs"
	CheckDeprecatedAPIs = "Chart warnings"
)

// Options say what to examine. At least one of Kind, Package, Extension
// and WatchesFile is required.
type Options struct {
	// Config reaches the cluster. Required.
	Config *rest.Config
	// Kind is the custom resource kind as KIND.GROUP or PLURAL.GROUP, e.g.
	// Widget.demo.example.com.
	Kind string
	// Package is an OLM package installed in Namespace: its Subscription,
	// CSV, owned CRDs, Deployments and ServiceAccount are examined.
	Package string
	// Extension is an OLM v1 ClusterExtension: extension.Diagnose's
	// problems, its catalogs and installer ServiceAccount, and the CRDs and
	// Deployments it installed are examined. A Package that no
	// Subscription installs is looked for among the ClusterExtensions too.
	Extension string
	// Namespace is where the operator is installed, and where its custom
	// resources are looked for unless WatchNamespaces says otherwise; empty
	// means all namespaces for the custom resources.
	Namespace string
	// WatchesFile is the operator's watches.yaml: its charts are rendered to
	// derive the permissions they need (package rbac) and to find removed APIs.
	WatchesFile string
	// ServiceAccount is the operator's ServiceAccount as namespace/name;
	// default: the one of the CSV's Deployment.
	ServiceAccount string
	// WatchNamespaces are the namespaces the operator watches, where its
	// namespaced permissions are checked and its custom resources looked
	// for ("" is all namespaces); default: the OperatorGroup's target
	// namespaces, else Namespace.
	WatchNamespaces []string
	// KubeVersion is the version APIs are checked against; default the cluster's.
	KubeVersion string
}

// Report is the checklist's outcome.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Severity == Fail })
}

// Count returns how many checks have severity s.
func (r *Report) Count(s olm.Severity) int {
	n := 0
	for _, c := range r.Checks {
		if c.Severity == s {
			n++
		}
	}
	return n
}

// Find returns the checks named name.
func (r *Report) Find(name string) []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Check == name {
			out = append(out, c)
		}
	}
	return out
}

// doctor holds what one Run learned so far.
type doctor struct {
	opts Options
	c    client.Client
	rep  *Report
	// crds are the CRDs examined, by KIND.GROUP.
	crds []*apiextensionsv1.CustomResourceDefinition
	// csv is the operator's CSV, when OLM installed it.
	csv *v1alpha1.ClusterServiceVersion
	// deployments are the operator's Deployments, in opts.Namespace.
	deployments []string
	// extension is the ClusterExtension that installed the operator, when
	// OLM v1 did.
	extension string
}

func (d *doctor) add(c Check) { d.rep.Checks = append(d.rep.Checks, c) }

// Run examines the operator and returns the checklist. An error means the
// cluster could not be asked; problems found are failed checks.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Config == nil {
		return nil, errors.New("doctor: no cluster configuration")
	}
	if opts.Kind == "" && opts.Package == "" && opts.Extension == "" && opts.WatchesFile == "" {
		return nil, errors.New("doctor: say what to examine: a kind, a package, a ClusterExtension or a watches file")
	}
	if opts.Package != "" && opts.Namespace == "" {
		return nil, errors.New("doctor: a package is looked for in a namespace: set one")
	}
	s, err := olm.NewScheme()
	if err != nil {
		return nil, err
	}
	if err := authorizationv1.AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := olm.NewClientWithScheme(opts.Config, s)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if opts.KubeVersion == "" {
		dc, err := discovery.NewDiscoveryClientForConfig(opts.Config)
		if err != nil {
			return nil, err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("doctor: asking the cluster's version: %w", err)
		}
		minor, err := rbac.ParseKubeVersion(v.GitVersion)
		if err != nil {
			return nil, err
		}
		opts.KubeVersion = fmt.Sprintf("1.%d", minor)
	}
	d := &doctor{opts: opts, c: c, rep: &Report{}}

	var ws []watches.Watch
	if opts.WatchesFile != "" {
		if ws, err = watches.Load(opts.WatchesFile, watches.Options{}); err != nil {
			return nil, fmt.Errorf("doctor: %w", err)
		}
	}
	// The kinds of the CRDs an OLM v1 install put on the cluster.
	var extKinds []string
	switch {
	case opts.Extension != "":
		extKinds, err = d.extensionChecks(ctx, opts.Extension)
	case opts.Package != "":
		extKinds, err = d.packageChecks(ctx)
	}
	if err != nil {
		return nil, err
	}
	// The kinds to examine: the one asked for, else the CSV's or the
	// ClusterExtension's, else the watches file's.
	var kinds []string
	switch {
	case opts.Kind != "":
		kinds = []string{opts.Kind}
	case d.extension != "":
		kinds = extKinds
	case d.csv != nil:
		for _, o := range d.csv.Spec.CustomResourceDefinitions.Owned {
			kinds = append(kinds, o.Kind+"."+groupOfCRDName(o.Name))
		}
	default:
		for _, w := range ws {
			kinds = append(kinds, w.Kind+"."+w.Group)
		}
	}
	for _, k := range kinds {
		if err := d.crdCheck(ctx, k); err != nil {
			return nil, err
		}
	}
	if d.csv == nil && d.extension == "" && opts.Package == "" && opts.Extension == "" {
		if err := d.findInstaller(ctx); err != nil {
			return nil, err
		}
	}
	if err := d.deploymentChecks(ctx); err != nil {
		return nil, err
	}
	for _, crd := range d.crds {
		if err := d.crChecks(ctx, crd); err != nil {
			return nil, err
		}
	}
	if len(ws) > 0 {
		if err := d.chartChecks(ctx, ws); err != nil {
			return nil, err
		}
	}
	return d.rep, nil
}

// olmChecks adds olm.Diagnose's findings for the package observed in o
// and learns its CSV.
func (d *doctor) olmChecks(ctx context.Context, o *olm.Observed) error {
	if !o.Installed() {
		olm.ObserveCatalog(ctx, d.opts.Config, o)
	}
	for _, f := range olm.Diagnose(o) {
		if f.Check == olm.CheckOperatorPods {
			continue // the pods check below says it, per Deployment
		}
		d.add(f)
	}
	d.useCSV(o.CSV)
	if len(d.opts.WatchNamespaces) == 0 && len(o.OperatorGroups) == 1 {
		d.opts.WatchNamespaces = o.OperatorGroups[0].Status.Namespaces
	}
	return nil
}

// useCSV takes the operator's Deployments and ServiceAccount from csv.
func (d *doctor) useCSV(csv *v1alpha1.ClusterServiceVersion) {
	if csv == nil {
		return
	}
	d.csv = csv
	for _, dep := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		d.deployments = append(d.deployments, dep.Name)
		if d.opts.ServiceAccount == "" {
			d.opts.ServiceAccount = csv.Namespace + "/" + cmp.Or(dep.Spec.Template.Spec.ServiceAccountName, "default")
		}
	}
}

// findInstaller looks for what installed an examined CRD: a
// ClusterExtension (OLM v1), whose checks it adds, else a CSV in the
// namespace, with OLM's checks for its Subscription.
func (d *doctor) findInstaller(ctx context.Context) error {
	if len(d.crds) == 0 {
		return nil
	}
	if name := extensionOf(d.crds[0]); name != "" {
		_, err := d.extensionChecks(ctx, name)
		return err
	}
	if d.opts.Namespace == "" {
		return nil
	}
	var csvs v1alpha1.ClusterServiceVersionList
	if err := d.c.List(ctx, &csvs, client.InNamespace(d.opts.Namespace)); meta.IsNoMatchError(err) {
		// A cluster without OLM: nothing to find.
		return nil
	} else if err != nil {
		return fmt.Errorf("doctor: listing ClusterServiceVersions: %w", err)
	}
	for i := range csvs.Items {
		csv := &csvs.Items[i]
		if csv.Status.Reason == v1alpha1.CSVReasonCopied {
			continue
		}
		for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
			if o.Name == d.crds[0].Name {
				var subs v1alpha1.SubscriptionList
				if err := d.c.List(ctx, &subs, client.InNamespace(csv.Namespace)); err != nil {
					return fmt.Errorf("doctor: listing Subscriptions: %w", err)
				}
				for _, s := range subs.Items {
					if s.Spec != nil && (s.Status.InstalledCSV == csv.Name || s.Status.CurrentCSV == csv.Name) {
						d.opts.Package = s.Spec.Package
						o, err := olm.Observe(ctx, d.c, d.opts.Package, d.opts.Namespace)
						if err != nil {
							return fmt.Errorf("doctor: %w", err)
						}
						return d.olmChecks(ctx, o)
					}
				}
				d.useCSV(csv)
				return nil
			}
		}
	}
	return nil
}

// groupOfCRDName is the group of a CRD name plural.group.
func groupOfCRDName(name string) string {
	_, g, _ := strings.Cut(name, ".")
	return g
}

// crdCheck finds the CRD of kind (KIND.GROUP or PLURAL.GROUP) and checks
// that it is Established and discovery serves its kind.
func (d *doctor) crdCheck(ctx context.Context, kind string) error {
	gk := schema.ParseGroupKind(kind)
	if gk.Group == "" {
		d.add(Check{Check: CheckCRD, Severity: Fail, Message: fmt.Sprintf("%q is not KIND.GROUP", kind), Fix: "name the kind with its group, e.g. --kind Widget.demo.example.com"})
		return nil
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := d.c.List(ctx, &crds); err != nil {
		return fmt.Errorf("doctor: listing CRDs: %w", err)
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	for i := range crds.Items {
		n := crds.Items[i].Spec.Names
		if crds.Items[i].Spec.Group == gk.Group && (n.Kind == gk.Kind || n.Plural == gk.Kind || n.Singular == gk.Kind) {
			crd = &crds.Items[i]
		}
	}
	if crd == nil {
		fix := "install the operator (chartpilot olm subscribe PACKAGE ...) or its CRD (kubectl apply -k config/crd)"
		d.add(Check{Check: CheckCRD, Severity: Fail, Message: fmt.Sprintf("no CRD serves %s: it is not installed", gk), Fix: fix})
		return nil
	}
	obj := "customresourcedefinition/" + crd.Name
	st, err := crdready.Observe(ctx, d.opts.Config, crd.Name)
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	switch {
	case st.Ready():
		d.add(Check{Check: CheckCRD, Severity: Pass, Object: obj, Message: "installed, Established and served"})
		d.crds = append(d.crds, crd)
	case st.Err != nil:
		return fmt.Errorf("doctor: reading CRD %s: %w", crd.Name, st.Err)
	case !st.Found:
		// Deleted since the list above.
		d.add(Check{Check: CheckCRD, Severity: Fail, Object: obj, Message: "deleted while doctor ran", Fix: "install the CRD again"})
	case st.Established:
		// Discovery catches up within seconds. Until then the client cannot
		// map the kind, so its custom resources are not checked.
		d.add(Check{Check: CheckCRD, Severity: Warn, Object: obj, Message: st.String(), Fix: "wait a few seconds and run doctor again; if it stays, see the kube-apiserver log"})
	case st.Condition == "":
		d.add(Check{Check: CheckCRD, Severity: Warn, Object: obj, Message: "no Established condition yet", Fix: "wait a few seconds and run doctor again"})
	default:
		d.add(Check{Check: CheckCRD, Severity: Fail, Object: obj, Message: st.String(), Fix: "kubectl get crd " + crd.Name + " -o yaml: see status.conditions (NamesAccepted: a name conflict?)"})
	}
	return nil
}
