package installer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

// Options configure Rules.
type Options struct {
	// Extension is the ClusterExtension's name (default: the first
	// bundle's package name).
	Extension string
	// Namespace is the install namespace, the ClusterExtension's
	// spec.namespace, where the installer ServiceAccount lives too
	// (default: the CSV's operatorframework.io/suggested-namespace
	// annotation, else PACKAGE-system, as operator-controller defaults).
	Namespace string
	// WatchNamespace is the one namespace the operator watches (see
	// olmv1.InstallOptions); "" is all namespaces, operator-controller
	// v1.2.0's only mode without its SingleOwnNamespaceInstallSupport gate.
	WatchNamespace string
	// ServiceAccount is the installer ServiceAccount's name (default:
	// EXTENSION-installer).
	ServiceAccount string
}

// The names operator-controller's API gives what the rules name.
const (
	// ExtensionGroup is the group of the ClusterExtension API.
	ExtensionGroup = "olm.operatorframework.io"
	// ExtensionFinalizers is the subresource the OwnerReferencesPermission
	// Enforcement admission plugin checks before it lets an object block
	// its ClusterExtension's deletion.
	ExtensionFinalizers = "clusterextensions/finalizers"
	suggestedNamespace  = "operatorframework.io/suggested-namespace"
)

// RBAC is the installer ServiceAccount, its rules and their bindings.
type RBAC struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Roles hold the rules limited to one namespace (the install
	// namespace; and the watched one in SingleNamespace mode), sorted by
	// namespace, each with its RoleBinding.
	Roles        []*rbacv1.Role
	RoleBindings []*rbacv1.RoleBinding
	// Warnings say what the rules allow beyond the bundle's own objects.
	Warnings []string
}

// Count is the number of rules.
func (r *RBAC) Count() int {
	n := len(r.ClusterRole.Rules)
	for _, role := range r.Roles {
		n += len(role.Rules)
	}
	return n
}

// Objects are the ServiceAccount, roles and bindings, to create in order.
func (r *RBAC) Objects() []runtime.Object {
	out := []runtime.Object{r.ServiceAccount, r.ClusterRole, r.ClusterRoleBinding}
	for i := range r.Roles {
		out = append(out, r.Roles[i], r.RoleBindings[i])
	}
	return out
}

// Verbs of the rules.
var (
	namedVerbs   = []string{"get", "patch", "delete"} // Helm's conflict check, upgrade and reconcile, removal
	watchVerbs   = []string{"list", "watch"}          // operator-controller's watches, all namespaces
	createVerbs  = []string{"create"}
	clusterVerbs = []string{"create", "list", "watch"}
)

// Rules derives the installer's RBAC for the bundles: what
// operator-controller needs to install each, to upgrade from one to another
// (the installed and the new bundle; the installer deletes what the new
// one drops) and to reconcile them. A bundle operator-controller refuses
// is an error (*olmv1.Refusal).
func Rules(opts Options, bundles ...*olmv1.Bundle) (*RBAC, error) {
	if len(bundles) == 0 {
		return nil, errors.New("installer rules: no bundle")
	}
	opts = defaults(opts, bundles[0])
	d := newDerivation(opts)
	for _, b := range bundles {
		objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: opts.Namespace, WatchNamespace: opts.WatchNamespace})
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.CSV.Name, err)
		}
		for _, o := range objs {
			if err := d.add(o); err != nil {
				return nil, fmt.Errorf("bundle %s: %s: %s %s: %w", b.CSV.Name, o.Source, o.GetKind(), o.GetName(), err)
			}
		}
	}
	return d.rbac()
}

func defaults(opts Options, b *olmv1.Bundle) Options {
	opts.Extension = cmp.Or(opts.Extension, b.Package, b.CSV.Name)
	opts.Namespace = cmp.Or(opts.Namespace, b.CSV.Annotations[suggestedNamespace], b.Package+"-system")
	opts.ServiceAccount = cmp.Or(opts.ServiceAccount, opts.Extension+"-installer")
	return opts
}

// derivation gathers what the objects need, per scope: "" is the cluster
// (the ClusterRole), else a namespace (a Role).
type derivation struct {
	opts Options
	// watched are the kinds listed and watched, cluster-wide.
	watched map[schema.GroupResource]bool
	// created are the kinds created, per scope.
	created map[string]map[schema.GroupResource]bool
	// named are the objects' names, per scope and kind.
	named map[string]map[schema.GroupResource]map[string]bool
	// bound are the roles bound but not made by the bundle, per scope and
	// resource (roles or clusterroles).
	bound map[string]map[schema.GroupResource]map[string]bool
	// held are the rules of the roles the bundle makes, per scope.
	held map[string][]rbacv1.PolicyRule
	// made are the roles the bundle makes: "ClusterRole/NAME", "Role/NS/NAME".
	made     map[string]bool
	bindings []olmv1.Object
	warnings []string
}

func newDerivation(opts Options) *derivation {
	return &derivation{opts: opts, watched: map[schema.GroupResource]bool{}, created: map[string]map[schema.GroupResource]bool{},
		named: map[string]map[schema.GroupResource]map[string]bool{}, bound: map[string]map[schema.GroupResource]map[string]bool{},
		held: map[string][]rbacv1.PolicyRule{}, made: map[string]bool{}}
}

var (
	clusterRolesResource = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	rolesResource        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
)

func (d *derivation) add(o olmv1.Object) error {
	gr := o.Resource()
	scope := o.GetNamespace()
	if !olmv1.Namespaced(o.GetKind()) {
		scope = ""
	}
	d.watched[gr] = true
	setOf(d.created, scope)[gr] = true
	namesOf(d.named, scope, gr)[o.GetName()] = true

	switch {
	case gr == clusterRolesResource || gr == rolesResource:
		var role rbacv1.ClusterRole // a Role has the same rules field
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			return err
		}
		d.held[scope] = append(d.held[scope], role.Rules...)
		if gr == rolesResource {
			d.made["Role/"+scope+"/"+o.GetName()] = true
			break
		}
		d.made["ClusterRole/"+o.GetName()] = true
		if role.AggregationRule != nil {
			// The API server wants every permission held (or escalate) to
			// create an aggregated ClusterRole; a create has no name.
			d.held[""] = append(d.held[""], rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"escalate"}})
			d.warnings = append(d.warnings, fmt.Sprintf("ClusterRole %s aggregates other roles: the API server lets only who may escalate any ClusterRole create it, so the installer may", o.GetName()))
		}
	case gr.Group == rbacv1.GroupName && (gr.Resource == "rolebindings" || gr.Resource == "clusterrolebindings"):
		d.bindings = append(d.bindings, o)
	}
	return nil
}

// bindRules: a binding to a role the bundle makes is allowed because the
// installer holds that role's rules; one to another role needs bind on it,
// in the binding's scope.
func (d *derivation) bindRules() error {
	for _, o := range d.bindings {
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			return fmt.Errorf("%s: %s %s: %w", o.Source, o.GetKind(), o.GetName(), err)
		}
		key := "ClusterRole/" + b.RoleRef.Name
		res := clusterRolesResource
		if b.RoleRef.Kind == "Role" {
			key, res = "Role/"+o.GetNamespace()+"/"+b.RoleRef.Name, rolesResource
		}
		if d.made[key] {
			continue
		}
		namesOf(d.bound, o.GetNamespace(), res)[b.RoleRef.Name] = true
		d.warnings = append(d.warnings, fmt.Sprintf("%s %s binds %s %s, which the bundle does not make: the installer may bind it (whatever it grants)", o.GetKind(), o.GetName(), b.RoleRef.Kind, b.RoleRef.Name))
	}
	return nil
}

func (d *derivation) rbac() (*RBAC, error) {
	if err := d.bindRules(); err != nil {
		return nil, err
	}
	scopes := slices.Concat(slices.Collect(maps.Keys(d.created)), slices.Collect(maps.Keys(d.named)),
		slices.Collect(maps.Keys(d.held)), slices.Collect(maps.Keys(d.bound)))
	slices.Sort(scopes)
	cluster := prune(d.rules(""), nil)
	out := &RBAC{Warnings: d.warnings}
	name := d.opts.Extension + "-installer"
	ns := d.opts.Namespace
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: d.opts.ServiceAccount}}
	out.ServiceAccount = &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.opts.ServiceAccount}}
	out.ClusterRole = &rbacv1.ClusterRole{TypeMeta: rbacType("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: cluster}
	out.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{TypeMeta: rbacType("ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	for _, s := range slices.Compact(scopes) {
		if s == "" {
			continue
		}
		rules := prune(d.rules(s), cluster)
		if len(rules) == 0 {
			continue
		}
		out.Roles = append(out.Roles, &rbacv1.Role{TypeMeta: rbacType("Role"), ObjectMeta: metav1.ObjectMeta{Namespace: s, Name: name}, Rules: rules})
		out.RoleBindings = append(out.RoleBindings, &rbacv1.RoleBinding{TypeMeta: rbacType("RoleBinding"), ObjectMeta: metav1.ObjectMeta{Namespace: s, Name: name},
			Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	return out, nil
}

func rbacType(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

// rules are a scope's rules: what the installer does to the objects first
// (less what the operator's rules it holds allow already), then what it
// must hold to grant, in a stable order.
func (d *derivation) rules(scope string) []rbacv1.PolicyRule {
	held := d.held[scope]
	if scope != "" {
		held = slices.Concat(held, d.held[""]) // a ClusterRole's rules apply in every namespace
	}
	// uncovered are the verbs of a rule on gr (with names) that held lacks.
	uncovered := func(gr schema.GroupResource, verbs, names []string) []string {
		return slices.DeleteFunc(slices.Clone(verbs), func(v string) bool {
			return covers(held, rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{v}, ResourceNames: names})
		})
	}
	var out []rbacv1.PolicyRule
	// Unnamed verbs, one rule per group and verb set.
	verbsOf := map[schema.GroupResource][]string{}
	if scope == "" {
		for gr := range d.watched {
			verbsOf[gr] = watchVerbs
		}
		for gr := range d.created[""] {
			verbsOf[gr] = clusterVerbs
		}
	} else {
		for gr := range d.created[scope] {
			verbsOf[gr] = createVerbs
		}
	}
	for gr, verbs := range verbsOf {
		if verbsOf[gr] = uncovered(gr, verbs, nil); len(verbsOf[gr]) == 0 {
			delete(verbsOf, gr)
		}
	}
	out = append(out, groupRules(verbsOf)...)
	// Named verbs, one rule per kind.
	for _, gr := range sortedResources(d.named[scope]) {
		names := slices.Sorted(maps.Keys(d.named[scope][gr]))
		if verbs := uncovered(gr, namedVerbs, names); len(verbs) > 0 {
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: verbs, ResourceNames: names})
		}
	}
	for _, gr := range sortedResources(d.bound[scope]) {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{"bind"}, ResourceNames: slices.Sorted(maps.Keys(d.bound[scope][gr]))})
	}
	if scope == "" {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{ExtensionGroup}, Resources: []string{ExtensionFinalizers}, Verbs: []string{"update"}, ResourceNames: []string{d.opts.Extension}})
	}
	for _, r := range d.held[scope] {
		if !slices.ContainsFunc(out, func(o rbacv1.PolicyRule) bool { return equalRule(o, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// groupRules makes one rule per API group and verb set.
func groupRules(verbsOf map[schema.GroupResource][]string) []rbacv1.PolicyRule {
	type key struct{ group, verbs string }
	byKey := map[key][]string{}
	for gr, verbs := range verbsOf {
		k := key{gr.Group, strings.Join(verbs, ",")}
		byKey[k] = append(byKey[k], gr.Resource)
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(a, b key) int {
		return cmp.Or(strings.Compare(a.group, b.group), strings.Compare(a.verbs, b.verbs))
	})
	var out []rbacv1.PolicyRule
	for _, k := range keys {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: slices.Sorted(slices.Values(byKey[k])), Verbs: strings.Split(k.verbs, ",")})
	}
	return out
}

func sortedResources[V any](m map[schema.GroupResource]V) []schema.GroupResource {
	return slices.SortedFunc(maps.Keys(m), func(a, b schema.GroupResource) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Resource, b.Resource))
	})
}

func setOf(m map[string]map[schema.GroupResource]bool, scope string) map[schema.GroupResource]bool {
	if m[scope] == nil {
		m[scope] = map[schema.GroupResource]bool{}
	}
	return m[scope]
}

func namesOf(m map[string]map[schema.GroupResource]map[string]bool, scope string, gr schema.GroupResource) map[string]bool {
	if m[scope] == nil {
		m[scope] = map[schema.GroupResource]map[string]bool{}
	}
	if m[scope][gr] == nil {
		m[scope][gr] = map[string]bool{}
	}
	return m[scope][gr]
}

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}
