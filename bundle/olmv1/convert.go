package olmv1

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// InstallOptions are the ClusterExtension's settings that shape the objects
// of a bundle.
type InstallOptions struct {
	// Namespace is the install namespace, the ClusterExtension's
	// spec.namespace. Required.
	Namespace string
	// WatchNamespace is the one namespace the operator watches, set by the
	// ClusterExtension annotation olm.operatorframework.io/watch-namespace
	// when operator-controller runs with its alpha feature gate
	// SingleOwnNamespaceInstallSupport; "" (the only choice without the
	// gate) is all namespaces.
	WatchNamespace string
}

// WatchNamespaceAnnotation is the ClusterExtension annotation that selects
// a single watched namespace in operator-controller v1.2.0 (with its
// SingleOwnNamespaceInstallSupport feature gate on).
const WatchNamespaceAnnotation = "olm.operatorframework.io/watch-namespace"

// Object is one object operator-controller installs for a bundle.
type Object struct {
	*unstructured.Unstructured
	// Source says where it comes from: a manifest's file, or the CSV's
	// install strategy.
	Source string
}

// Resource is the object's API resource.
func (o Object) Resource() schema.GroupResource { return Resource(o.GroupVersionKind()) }

// Refusal is why operator-controller refuses a bundle, and what to do.
type Refusal struct {
	// File and Field locate the cause in the bundle, when one does.
	File, Field string
	// Reason is what operator-controller refuses; Fix what to change.
	Reason, Fix string
}

func (r *Refusal) Error() string {
	loc := r.File
	if r.Field != "" {
		loc += " " + r.Field
	}
	if loc != "" {
		loc += ": "
	}
	return fmt.Sprintf("%soperator-controller %s refuses the bundle: %s", loc, OperatorControllerVersion, r.Reason)
}

// Convert makes the objects operator-controller installs for the bundle
// with these options, with the names it gives them, or the first Refusal
// (*Refusal) it meets, as operator-controller stops at the first.
func Convert(b *Bundle, opts InstallOptions) ([]Object, error) {
	if opts.Namespace == "" {
		return nil, fmt.Errorf("convert %s: no install namespace", b.CSV.Name)
	}
	if errs := validation.IsDNS1123Subdomain(opts.WatchNamespace); opts.WatchNamespace != "" && len(errs) > 0 {
		return nil, fmt.Errorf("watch namespace %q: %s", opts.WatchNamespace, strings.Join(errs, "; "))
	}
	for _, check := range []func(*Bundle, InstallOptions) *Refusal{refuseSubdirectories, refuseInstallMode, refuseAPIServices, refuseWebhooks, refuseKinds} {
		if r := check(b, opts); r != nil {
			return nil, r
		}
	}
	c := &converter{b: b, opts: opts, allNamespaces: opts.WatchNamespace == ""}
	return c.objects()
}

type converter struct {
	b             *Bundle
	opts          InstallOptions
	allNamespaces bool
}

// objects are in operator-controller's order: ServiceAccounts, Roles,
// RoleBindings, ClusterRoles, ClusterRoleBindings, the other manifests,
// Deployments. (Helm sorts them by kind before it creates them.)
func (c *converter) objects() ([]Object, error) {
	csv := c.b.CSV
	strategy := csv.Spec.InstallStrategy.StrategySpec
	source := c.b.CSVFile + " spec.install"
	var out []Object
	add := func(obj runtime.Object) error {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		out = append(out, Object{Unstructured: &unstructured.Unstructured{Object: m}, Source: source})
		return nil
	}

	accounts := map[string]bool{}
	for _, d := range strategy.DeploymentSpecs {
		accounts[serviceAccountName(d.Spec.Template.Spec.ServiceAccountName)] = true
	}
	permissions, clusterPermissions := strategy.Permissions, strategy.ClusterPermissions
	for _, p := range slices.Concat(permissions, clusterPermissions) {
		accounts[serviceAccountName(p.ServiceAccountName)] = true
	}
	for _, name := range slices.Sorted(maps.Keys(accounts)) {
		if name == "default" {
			continue // the namespace has it
		}
		if err := add(&corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: name}}); err != nil {
			return nil, err
		}
	}

	// In AllNamespaces mode the permissions become ClusterRoles too.
	// (operator-controller v1.2.0 means to add get/list/watch on namespaces
	// to them, but appends to a copy: the roles have the CSV's rules only.)
	if c.allNamespaces {
		clusterPermissions = slices.Concat(clusterPermissions, permissions)
		permissions = nil
	}
	var roles, roleBindings []runtime.Object
	for _, p := range permissions {
		name, err := roleName(csv.Name, p)
		if err != nil {
			return nil, err
		}
		ns := c.opts.WatchNamespace
		roles = append(roles, &rbacv1.Role{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"),
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: p.Rules})
		roleBindings = append(roleBindings, &rbacv1.RoleBinding{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Subjects:   c.subjects(p), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	var clusterRoles, clusterRoleBindings []runtime.Object
	for _, p := range clusterPermissions {
		name, err := roleName(csv.Name, p)
		if err != nil {
			return nil, err
		}
		clusterRoles = append(clusterRoles, &rbacv1.ClusterRole{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
			ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules})
		clusterRoleBindings = append(clusterRoleBindings, &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects:   c.subjects(p), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
	for _, obj := range slices.Concat(roles, roleBindings, clusterRoles, clusterRoleBindings) {
		if err := add(obj); err != nil {
			return nil, err
		}
	}

	for _, m := range c.b.Others {
		o := m.Object.DeepCopy()
		if supportedKinds[o.GetKind()] {
			o.SetNamespace(c.opts.Namespace)
		} else if o.GetNamespace() == "" && Namespaced(o.GetKind()) {
			o.SetNamespace(c.opts.Namespace) // Helm's default namespace
		}
		out = append(out, Object{Unstructured: o, Source: m.File})
	}

	for _, d := range strategy.DeploymentSpecs {
		spec := *d.Spec.DeepCopy()
		annotations := map[string]string{}
		maps.Copy(annotations, csv.Annotations)
		maps.Copy(annotations, spec.Template.Annotations)
		annotations["olm.targetNamespaces"] = c.opts.WatchNamespace
		spec.Template.Annotations = annotations
		if err := add(&appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"),
			ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: d.Name, Labels: d.Label}, Spec: spec}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *converter) subjects(p v1alpha1.StrategyDeploymentPermissions) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: c.opts.Namespace, Name: serviceAccountName(p.ServiceAccountName)}}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// serviceAccountName is the account a pod without one runs as.
func serviceAccountName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// maxNameLength is the length of the names operator-controller generates.
const maxNameLength = 63

// roleName is the name operator-controller v1.2.0 gives the (Cluster)Role
// and binding of a permissions entry: "<csv>-<serviceaccount>-<hash>",
// the hash being the base-36 SHA-224 of the entry's JSON (with the
// encoder's newline), the prefix cut to fit 63 characters. The same rules
// give the same name; changed rules a new one.
func roleName(csvName string, p v1alpha1.StrategyDeploymentPermissions) (string, error) {
	h := sha256.New224()
	if err := json.NewEncoder(h).Encode(p); err != nil {
		return "", fmt.Errorf("hashing the permissions of %s: %w", serviceAccountName(p.ServiceAccountName), err)
	}
	hash := new(big.Int).SetBytes(h.Sum(nil)).Text(36)
	base := csvName + "-" + serviceAccountName(p.ServiceAccountName)
	if len(base)+len(hash) > maxNameLength {
		base = base[:maxNameLength-len(hash)-1]
	}
	return base + "-" + hash, nil
}
