package doctor

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
)

// Names of the checks of an install through OLM v1.
const (
	CheckClusterExtension = "ClusterExtension"
	CheckClusterCatalog   = "ClusterCatalog"
	CheckInstaller        = "Installer ServiceAccount"
)

// extensionChecks adds extension.Diagnose's problems for the
// ClusterExtension name, each as a check with its fix, and learns the
// operator it installed: the kinds of its CRDs (returned), its
// Deployments and their ServiceAccount.
func (d *doctor) extensionChecks(ctx context.Context, name string) ([]string, error) {
	o, err := extension.Observe(ctx, d.c, name)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	r := o.Report()
	obj := "clusterextension/" + name
	ext := o.Extension
	if ext == nil {
		for _, p := range r.Problems {
			d.add(problemCheck(p, obj))
		}
		return nil, nil
	}
	if r.Installed {
		d.add(Check{Check: CheckClusterExtension, Severity: Pass, Object: obj,
			Message: fmt.Sprintf("installed %s %s (package %s)", r.Bundle.Name, r.Bundle.Version, r.Package)})
	}
	for _, cat := range r.Catalogs {
		if cat.Serving && !extension.HasProblem(r.Problems, extension.ProblemCatalogNotServing, extension.ProblemCatalogUnpullable) {
			d.add(Check{Check: CheckClusterCatalog, Severity: Pass, Object: "clustercatalog/" + cat.Name, Message: "serving " + cat.Image})
		}
	}
	switch {
	case !o.Features.InstallerServiceAccount:
		d.add(Check{Check: CheckInstaller, Severity: Pass, Object: obj,
			Message: "none used: this cluster's OLM v1 installs as operator-controller's own ServiceAccount (spec.serviceAccount is ignored)"})
		if err := d.extensionWriterChecks(ctx); err != nil {
			return nil, err
		}
	case o.ServiceAccountFound && !extension.HasProblem(r.Problems, extension.ProblemPermissionDenied):
		d.add(Check{Check: CheckInstaller, Severity: Pass, Object: "serviceaccount/" + r.ServiceAccount, Message: "exists in " + r.Namespace})
	}
	for _, dep := range r.Deprecations() {
		d.add(Check{Check: CheckClusterExtension, Severity: Warn, Object: obj,
			Message: fmt.Sprintf("%s: %s", dep.Type, dep.Message), Fix: dep.Meaning})
	}
	for _, p := range r.Problems {
		c := problemCheck(p, obj)
		if p.Missing != nil && o.ServiceAccountFound {
			if err := d.confirmMissing(ctx, ext, p.Missing, &c); err != nil {
				return nil, err
			}
		}
		d.add(c)
	}
	return d.useExtension(ctx, ext)
}

// problemCheck is a problem of extension.Diagnose as a check.
func problemCheck(p extension.Problem, obj string) Check {
	c := Check{Check: CheckClusterExtension, Severity: Fail, Object: obj, Message: fmt.Sprintf("%s: %s", p.Kind, p.Message), Fix: p.Fix}
	switch p.Kind {
	case extension.ProblemNamespaceMissing, extension.ProblemServiceAccountMissing, extension.ProblemPermissionDenied:
		c.Check = CheckInstaller
	case extension.ProblemNoCatalog, extension.ProblemCatalogNotServing, extension.ProblemCatalogUnpullable:
		c.Check = CheckClusterCatalog
	case extension.ProblemRetrying:
		// operator-controller retries on its own: it may yet succeed.
		c.Severity = Warn
	}
	return c
}

// confirmMissing asks the API server, with SubjectAccessReviews as the
// installer, whether the rules operator-controller was refused are still
// missing: the refusal it reports may be older than a fix (it retries
// with backoff).
func (d *doctor) confirmMissing(ctx context.Context, ext *extension.Extension, m *extension.MissingRules, c *Check) error {
	ns, sa := ext.Spec.Namespace, ext.Spec.InstallerServiceAccount()
	user := "system:serviceaccount:" + ns + ":" + sa
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	var refused []string
	for _, attrs := range ruleAttributes(m, ext.Name) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}}
		attrs.set(&sar.Spec)
		if err := d.c.Create(ctx, sar); err != nil {
			return fmt.Errorf("doctor: SubjectAccessReview as %s: %w", user, err)
		}
		if !sar.Status.Allowed {
			refused = append(refused, attrs.String())
		}
	}
	if len(refused) == 0 {
		c.Severity = Warn
		c.Message += " (granted since: a SubjectAccessReview as the installer allows it now)"
		c.Fix = "wait: operator-controller retries with backoff; if the refusal stays, see its log"
		return nil
	}
	c.Message += fmt.Sprintf(" (confirmed: a SubjectAccessReview as the installer still refuses %s)", strings.Join(refused, "; "))
	return nil
}

// access is one request a missing rule allows.
type access struct {
	res    *authorizationv1.ResourceAttributes
	nonRes *authorizationv1.NonResourceAttributes
}

func (a access) set(s *authorizationv1.SubjectAccessReviewSpec) {
	s.ResourceAttributes, s.NonResourceAttributes = a.res, a.nonRes
}

func (a access) String() string {
	if a.nonRes != nil {
		return a.nonRes.Verb + " " + a.nonRes.Path
	}
	r := a.res
	s := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Group != "" {
		s += "." + r.Group
	}
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Namespace != "" {
		s += " in " + r.Namespace
	}
	return s
}

// ruleAttributes are the requests the missing rules stand for. A create is
// authorized without a name, whatever the refusal said; update on the
// ClusterExtension's finalizers is for the extension itself.
func ruleAttributes(m *extension.MissingRules, extName string) []access {
	var out []access
	for _, r := range m.Rules {
		for _, verb := range r.Verbs {
			for _, url := range r.NonResourceURLs {
				out = append(out, access{nonRes: &authorizationv1.NonResourceAttributes{Path: url, Verb: verb}})
			}
			names := r.ResourceNames
			if len(names) == 0 || verb == "create" {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, n := range names {
						if n == "" && g == extension.Group && res == "clusterextensions/finalizers" {
							n = extName
						}
						out = append(out, access{res: &authorizationv1.ResourceAttributes{
							Namespace: m.Namespace, Verb: verb, Group: g, Resource: resource, Subresource: sub, Name: n}})
					}
				}
			}
		}
	}
	return out
}

// useExtension learns the operator ext installed: operator-controller
// labels every object of the bundle with its owner. OLM v1 installs for
// all namespaces, where its custom resources are looked for.
func (d *doctor) useExtension(ctx context.Context, ext *extension.Extension) ([]string, error) {
	d.extension = ext.Name
	d.opts.Namespace = ext.Spec.Namespace
	if len(d.opts.WatchNamespaces) == 0 {
		d.opts.WatchNamespaces = []string{""}
	}
	owned := client.MatchingLabels{extension.OwnerKindLabel: extension.ExtensionKind, extension.OwnerNameLabel: ext.Name}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := d.c.List(ctx, &crds, owned); err != nil {
		return nil, fmt.Errorf("doctor: listing the CRDs of ClusterExtension %s: %w", ext.Name, err)
	}
	var kinds []string
	for _, crd := range crds.Items {
		kinds = append(kinds, crd.Spec.Names.Kind+"."+crd.Spec.Group)
	}
	var deps appsv1.DeploymentList
	if err := d.c.List(ctx, &deps, client.InNamespace(ext.Spec.Namespace), owned); err != nil {
		return nil, fmt.Errorf("doctor: listing the Deployments of ClusterExtension %s: %w", ext.Name, err)
	}
	for _, dep := range deps.Items {
		d.deployments = append(d.deployments, dep.Name)
		if d.opts.ServiceAccount == "" {
			sa := dep.Spec.Template.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			d.opts.ServiceAccount = ext.Spec.Namespace + "/" + sa
		}
	}
	return kinds, nil
}

// packageChecks examines the package's install: by the Subscription of
// OLM v0 when one is in the namespace, else by a ClusterExtension of
// OLM v1 that installs it. It returns the kinds of an extension's CRDs.
func (d *doctor) packageChecks(ctx context.Context) ([]string, error) {
	o, err := olm.Observe(ctx, d.c, d.opts.Package, d.opts.Namespace)
	noV0 := meta.IsNoMatchError(err)
	if err != nil && !noV0 {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if noV0 || o.Subscription == nil {
		ext, err := extension.PickByPackage(ctx, d.c, d.opts.Package, d.opts.Namespace)
		if err != nil {
			return nil, fmt.Errorf("doctor: %w", err)
		}
		if ext != nil {
			return d.extensionChecks(ctx, ext.Name)
		}
	}
	if noV0 {
		d.add(Check{Check: olm.CheckSubscription, Severity: Fail,
			Message: fmt.Sprintf("package %s: the cluster serves neither OLM v0's API (no Subscriptions) nor a ClusterExtension of it", d.opts.Package),
			Fix:     "install it: chartpilot olm v1 install PACKAGE --catalog-image IMAGE -n NAMESPACE (or install OLM v0 and chartpilot olm subscribe)"})
		return nil, nil
	}
	return nil, d.olmChecks(ctx, o)
}

// extensionOf is the ClusterExtension that installed crd, by the labels
// operator-controller puts on it; "" when none did.
func extensionOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	if l := crd.GetLabels(); l[extension.OwnerKindLabel] == extension.ExtensionKind {
		return l[extension.OwnerNameLabel]
	}
	return ""
}
