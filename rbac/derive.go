package rbac

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/chart"
)

// ErrRemovedAPI is wrapped by Result.Err (and CheckCRDs' error) when the
// chart renders, or ships under crds/, an apiVersion the target Kubernetes
// version no longer serves.
var ErrRemovedAPI = errors.New("removed Kubernetes API")

// Owner is the operator's own custom resource.
type Owner struct {
	// Group is the API group, e.g. "charts.example.com".
	Group string
	// Resource is the plural resource name, e.g. "webapps".
	Resource string
}

// Options say what to derive RBAC for.
type Options struct {
	// Chart is the chart the operator manages. Required.
	Chart *chart.Chart
	// Owner is the operator's custom resource. Required.
	Owner Owner
	// SampleValues are the values (the spec) of each sample CR; the chart is
	// rendered with each besides its defaults.
	SampleValues []map[string]any
	// WatchNamespace, when set, is the one namespace the operator watches:
	// namespaced rules go to a Role there, cluster-scoped ones to the
	// ClusterRole. Empty means all namespaces: everything in the ClusterRole.
	WatchNamespace string
	// Name is the name of the Role and the ClusterRole (default "manager-role").
	Name string
	// KubeVersion is the Kubernetes version APIs are checked against
	// (default DefaultKubeVersion).
	KubeVersion string
	// Config, when set, resolves kinds through this cluster's discovery
	// before the built-in table.
	Config *rest.Config
}

func (o Options) withDefaults() (Options, error) {
	if o.Chart == nil {
		return o, errors.New("deriving RBAC: no chart")
	}
	if o.Owner.Group == "" || o.Owner.Resource == "" {
		return o, errors.New("deriving RBAC: the owner custom resource needs a group and a resource")
	}
	if o.Name == "" {
		o.Name = "manager-role"
	}
	if o.KubeVersion == "" {
		o.KubeVersion = DefaultKubeVersion
	}
	return o, nil
}

// Kind is one kind the chart creates.
type Kind struct {
	schema.GroupVersionKind
	// Resource and Namespaced are the kind's resource name and scope.
	Resource   string
	Namespaced bool
	// ResolvedBy says where Resource and Namespaced come from.
	ResolvedBy Source
	// Templates are the templates that create it.
	Templates []string
	// Gates are the values that must be set for the chart to create it;
	// empty when the default values or a sample's create it. A leading "!"
	// means the value must be unset.
	Gates []string
	// ScannedOnly is true for a kind found in a template's text that no
	// render produced.
	ScannedOnly bool
}

// Problem is a finding about the chart, tied to the template it is in.
type Problem struct {
	// Template is the chart file, e.g. "legacy/templates/cronjob.yaml".
	Template string
	// GVK is the kind concerned, if any.
	GVK schema.GroupVersionKind
	// Message says what is wrong and what to do.
	Message string
}

func (p Problem) String() string {
	if p.Template == "" {
		return p.Message
	}
	return p.Template + ": " + p.Message
}

// Rule is a policy rule with the reasons it is granted.
type Rule struct {
	rbacv1.PolicyRule
	// Namespaced rules go to the Role when there is one.
	Namespaced bool
	// Reasons are comments for role.yaml: what needs the rule.
	Reasons []string
}

// Result is the RBAC derived for a chart.
type Result struct {
	// Kinds are the kinds the chart creates, sorted by group, kind, version.
	Kinds []Kind
	// Rules are every rule, in the order of role.yaml.
	Rules []Rule
	// ClusterRole holds the cluster-scoped rules, and the namespaced ones
	// when the operator watches all namespaces.
	ClusterRole *rbacv1.ClusterRole
	// Role holds the namespaced rules when the operator watches one
	// namespace; nil otherwise.
	Role *rbacv1.Role
	// Errors are removed APIs, in templates and in crds/; Warnings
	// deprecated APIs, guessed resource names and kinds found only by
	// scanning templates.
	Errors, Warnings []Problem
	opts             Options
}

// Err is nil unless the chart renders removed APIs, in which case it wraps
// ErrRemovedAPI and names each one.
func (r *Result) Err() error {
	return removedAPIError(r.Errors, r.opts.KubeVersion)
}

// created is one kind seen in renders or templates, before resolution.
type created struct {
	gvk       schema.GroupVersionKind
	templates map[string]bool
	gates     map[string]bool
	// ungated is true once default or sample values render it.
	ungated, rendered bool
}

// Derive renders the chart and derives the RBAC its operator needs.
func Derive(opts Options) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	minor, err := ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("deriving RBAC: %w", err)
	}
	res := &Result{opts: opts}
	resolv, err := newResolver(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("deriving RBAC: %w", err)
	}
	ns := opts.WatchNamespace
	if ns == "" {
		ns = "default"
	}
	kinds := map[schema.GroupVersionKind]*created{}
	see := func(m chart.Manifest, gates []string) {
		gvk := m.GroupVersionKind()
		c, ok := kinds[gvk]
		if !ok {
			c = &created{gvk: gvk, templates: map[string]bool{}, gates: map[string]bool{}}
			kinds[gvk] = c
		}
		c.rendered = true
		c.templates[m.Source] = true
		if gates == nil {
			c.ungated = true
		}
		for _, g := range gates {
			c.gates[g] = true
		}
	}
	var renders []*chart.Rendered
	render := func(vals map[string]any, what string) (*chart.Rendered, error) {
		r, err := opts.Chart.Render(chart.RenderOptions{Namespace: ns, Values: vals, KubeVersion: renderKubeVersion(minor)})
		if err != nil {
			return nil, fmt.Errorf("rendering with %s: %w", what, err)
		}
		renders = append(renders, r)
		return r, nil
	}

	// 1. Default values and each sample's.
	valueSets := append([]map[string]any{nil}, opts.SampleValues...)
	for i, vals := range valueSets {
		what := "the default values"
		if i > 0 {
			what = fmt.Sprintf("the values of sample %d", i)
		}
		r, err := render(vals, what)
		if err != nil {
			return nil, fmt.Errorf("deriving RBAC for chart %s: %w", opts.Chart.Name(), err)
		}
		for _, m := range r.Objects {
			see(m, nil)
		}
	}

	// 2. Value gates turned on, all at once, else one by one.
	scans := scanTemplates(opts.Chart.Helm)
	defaults, err := chartutil.CoalesceValues(opts.Chart.Helm, nil)
	if err != nil {
		return nil, fmt.Errorf("deriving RBAC for chart %s: default values: %w", opts.Chart.Name(), err)
	}
	flips := gatesToFlip(scans, defaults)
	gatesOf := map[string][]gate{}
	for _, s := range scans {
		gatesOf[s.Source] = s.Gates
	}
	renderGated := func(paths []string) error {
		vals := map[string]any{}
		for _, p := range paths {
			setValue(vals, p, true)
		}
		r, err := render(vals, strings.Join(paths, ", ")+" set")
		if err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range paths {
			on[p] = true
		}
		for _, m := range r.Objects {
			var gates []string
			for _, g := range gatesOf[m.Source] {
				if on[g.Path] && !g.Negated {
					gates = append(gates, g.Path)
				}
			}
			if len(gates) == 0 {
				gates = paths
			}
			see(m, gates)
		}
		return nil
	}
	if len(flips) > 0 {
		if err := renderGated(flips); err != nil {
			for _, p := range flips {
				if err := renderGated([]string{p}); err != nil {
					res.Warnings = append(res.Warnings, Problem{Message: fmt.Sprintf("could not render with %s=true to find what it creates (its templates were scanned instead): %v", p, err)})
				}
			}
		}
	}

	// 3. Kinds only the templates' text shows.
	for _, s := range scans {
		for _, gvk := range s.Kinds {
			if _, ok := kinds[gvk]; ok {
				continue
			}
			c := &created{gvk: gvk, templates: map[string]bool{s.Source: true}, gates: map[string]bool{}}
			for _, g := range s.Gates {
				if g.Negated {
					c.gates["!"+g.Path] = true
				} else {
					c.gates[g.Path] = true
				}
			}
			kinds[gvk] = c
		}
	}

	// CRDs the chart ships (crds/) or renders teach the resolver their kinds.
	// Helm installs crds/ as they are, before anything else: a removed
	// apiVersion there fails every install.
	crdErrs, crdWarns := checkCRDFiles(renders, minor)
	res.Errors = append(res.Errors, crdErrs...)
	res.Warnings = append(res.Warnings, crdWarns...)
	crdFiles := map[string]bool{}
	for _, r := range renders {
		for _, m := range r.CRDs {
			crdFiles[m.Source] = true
			if err := resolv.addCRD(m); err != nil {
				return nil, fmt.Errorf("deriving RBAC for chart %s: %w", opts.Chart.Name(), err)
			}
		}
		for _, m := range r.Objects {
			if m.Object.GetKind() == "CustomResourceDefinition" && m.Object.GetAPIVersion() == "apiextensions.k8s.io/v1" {
				if err := resolv.addCRD(m); err != nil {
					return nil, fmt.Errorf("deriving RBAC for chart %s: %w", opts.Chart.Name(), err)
				}
			}
		}
	}

	// 4. Check and resolve every kind.
	rules := newRuleSet()
	gvkList := make([]schema.GroupVersionKind, 0, len(kinds))
	for gvk := range kinds {
		gvkList = append(gvkList, gvk)
	}
	sort.Slice(gvkList, func(i, j int) bool { return lessGVK(gvkList[i], gvkList[j]) })
	for _, gvk := range gvkList {
		c := kinds[gvk]
		k := Kind{GroupVersionKind: gvk, Templates: sortedKeys(c.templates), ScannedOnly: !c.rendered}
		if !c.ungated {
			k.Gates = sortedKeys(c.gates)
		}
		status, msg := checkAPI(gvk, minor)
		for _, t := range k.Templates {
			p := Problem{Template: t, GVK: gvk, Message: msg}
			switch status {
			case apiRemoved:
				res.Errors = append(res.Errors, p)
			case apiDeprecated:
				res.Warnings = append(res.Warnings, p)
			}
		}
		target := replacementFor(gvk, minor)
		if status == apiRemoved && target == gvk {
			// Removed without a replacement: nothing to grant, the error says what to do.
			res.Kinds = append(res.Kinds, k)
			continue
		}
		m := resolv.resolve(target)
		k.Resource, k.Namespaced, k.ResolvedBy = m.Resource, m.Namespaced, m.Source
		res.Kinds = append(res.Kinds, k)

		reason := fmt.Sprintf("%s %s (%s)", gvk.GroupVersion(), gvk.Kind, strings.Join(k.Templates, ", "))
		if target != gvk {
			reason = fmt.Sprintf("%s %s in place of removed %s (%s)", target.GroupVersion(), target.Kind, gvk.GroupVersion(), strings.Join(k.Templates, ", "))
		}
		if len(k.Gates) > 0 {
			reason += " when " + strings.Join(k.Gates, ", ") + " is set"
		}
		if k.ScannedOnly {
			reason += "; found by scanning the template"
			res.Warnings = append(res.Warnings, Problem{Template: k.Templates[0], GVK: gvk,
				Message: fmt.Sprintf("%s %s appears in the template but no render created it (gated by values chartpilot could not turn on); it is granted anyway", gvk.GroupVersion(), gvk.Kind)})
		}
		if m.Source == SourceGuessed {
			res.Warnings = append(res.Warnings, Problem{Template: k.Templates[0], GVK: gvk, Message: unknownKindMessage(gvk, target, m, minor)})
			reason += "; resource name guessed"
		}
		rules.add(m.Namespaced, target.Group, m.Resource, nil, manageVerbs, reason)
	}
	if len(crdFiles) > 0 {
		rules.add(false, "apiextensions.k8s.io", "customresourcedefinitions", nil, []string{"get", "list", "watch", "create"},
			"CRDs under crds/ ("+strings.Join(sortedKeys(crdFiles), ", ")+"): Helm creates them on install and never updates or deletes them")
	}

	// 5. RBAC objects of the chart: the operator must hold what they grant.
	if err := addHeldPermissions(rules, renders); err != nil {
		return nil, fmt.Errorf("deriving RBAC for chart %s: %w", opts.Chart.Name(), err)
	}

	// 6. What the operator itself needs.
	owner := opts.Owner.Resource + "." + opts.Owner.Group
	rules.add(true, opts.Owner.Group, opts.Owner.Resource, nil, []string{"get", "list", "watch", "patch", "update"}, owner+": the operator's custom resource (watch, finalizer)")
	rules.add(true, opts.Owner.Group, opts.Owner.Resource+"/status", nil, []string{"get", "patch", "update"}, owner+": its status")
	rules.add(true, opts.Owner.Group, opts.Owner.Resource+"/finalizers", nil, []string{"update"}, owner+": owner references blocking deletion of what it creates")
	rules.add(true, "", "secrets", nil, manageVerbs, "Helm release storage (sh.helm.release.v1.* Secrets)")
	rules.add(true, "", "events", nil, []string{"create", "patch"}, "events about the custom resource")
	rules.add(true, "coordination.k8s.io", "leases", nil, []string{"get", "create", "update"}, "leader election")

	res.Rules = rules.list()
	res.ClusterRole = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: metav1.ObjectMeta{Name: opts.Name}, Rules: []rbacv1.PolicyRule{}}
	if opts.WatchNamespace != "" {
		res.Role = &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.WatchNamespace}, Rules: []rbacv1.PolicyRule{}}
	}
	for _, r := range res.Rules {
		if r.Namespaced && res.Role != nil {
			res.Role.Rules = append(res.Role.Rules, r.PolicyRule)
		} else {
			res.ClusterRole.Rules = append(res.ClusterRole.Rules, r.PolicyRule)
		}
	}
	return res, nil
}

// manageVerbs are what Helm needs for a kind it creates: get to read the live
// object before an upgrade, list and watch for waits and drift detection,
// create on install, update and patch on upgrade and drift repair, delete on
// uninstall and when an upgrade drops the object.
var manageVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// gatesToFlip are the gate paths whose default value is false or unset:
// setting them true may make templates create more kinds.
func gatesToFlip(scans []templateScan, defaults map[string]any) []string {
	set := map[string]bool{}
	for _, s := range scans {
		for _, g := range s.Gates {
			if g.Negated {
				continue
			}
			v, ok := lookupValue(defaults, g.Path)
			if b, isBool := v.(bool); !ok || v == nil || (isBool && !b) {
				set[g.Path] = true
			}
		}
	}
	return sortedKeys(set)
}

// addHeldPermissions adds the rules of the Roles and ClusterRoles the chart
// renders (Kubernetes lets a subject create a role only with permissions it
// holds) and `bind` on the roles its bindings refer to that it does not create.
func addHeldPermissions(rules *ruleSet, renders []*chart.Rendered) error {
	for _, r := range renders {
		roles := map[string]bool{}
		for _, m := range r.Objects {
			if m.Object.GroupVersionKind().Group != rbacv1.GroupName {
				continue
			}
			switch m.Object.GetKind() {
			case "Role", "ClusterRole":
				roles[m.Object.GetKind()+"/"+m.Object.GetName()] = true
				var role rbacv1.ClusterRole // Role and ClusterRole share the rules field.
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object.Object, &role); err != nil {
					return fmt.Errorf("%s: %s %s: %w", m.Source, m.Object.GetKind(), m.Object.GetName(), err)
				}
				namespaced := m.Object.GetKind() == "Role"
				why := fmt.Sprintf("held so that Helm may create %s %s (%s): Kubernetes refuses to grant permissions the creator lacks", m.Object.GetKind(), m.Object.GetName(), m.Source)
				for _, pr := range role.Rules {
					if len(pr.NonResourceURLs) > 0 {
						rules.addNonResource(pr.NonResourceURLs, pr.Verbs, why)
						continue
					}
					for _, g := range pr.APIGroups {
						for _, res := range pr.Resources {
							// resourceNames are dropped: chart roles name
							// objects after the release, which varies by CR.
							rules.add(namespaced, g, res, nil, pr.Verbs, why)
						}
					}
				}
			}
		}
		for _, m := range r.Objects {
			if m.Object.GroupVersionKind().Group != rbacv1.GroupName {
				continue
			}
			kind := m.Object.GetKind()
			if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
				continue
			}
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object.Object, &b); err != nil {
				return fmt.Errorf("%s: %s %s: %w", m.Source, kind, m.Object.GetName(), err)
			}
			if roles[b.RoleRef.Kind+"/"+b.RoleRef.Name] {
				continue
			}
			resource := "clusterroles"
			if b.RoleRef.Kind == "Role" {
				resource = "roles"
			}
			rules.add(kind == "RoleBinding", rbacv1.GroupName, resource, []string{b.RoleRef.Name}, []string{"bind"},
				fmt.Sprintf("%s %s (%s) binds %s %s, which the chart does not create", kind, m.Object.GetName(), m.Source, b.RoleRef.Kind, b.RoleRef.Name))
		}
	}
	return nil
}

func lessGVK(a, b schema.GroupVersionKind) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Version < b.Version
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
