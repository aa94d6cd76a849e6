package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/metricsauth"
	"github.com/chartpilot/chartpilot/rbac"
)

// The operator's RBAC under config/rbac, by path relative to the project.
const (
	// RoleFile holds the rules derived from the charts: the ClusterRole
	// manager-role (what is cluster-scoped) and the Role manager-role
	// (what the operator needs in each namespace it watches).
	RoleFile = "config/rbac/role.yaml"
	// RoleBindingFile binds both to the operator's ServiceAccount.
	RoleBindingFile = "config/rbac/role_binding.yaml"
	// AllNamespacesRoleFile grants the Role's rules in every namespace, for
	// an operator deployed without OLM that watches all namespaces.
	AllNamespacesRoleFile = "config/rbac/role_all_namespaces.yaml"
	rbacKustomizationFile = "config/rbac/kustomization.yaml"
	// MetricsReaderRoleFile holds the ClusterRole whose holders may scrape
	// the operator's metrics (metricsauth.ReaderRules): Prometheus's
	// ServiceAccount is bound to it; the operator is not.
	MetricsReaderRoleFile = "config/rbac/metrics_reader_role.yaml"
)

// AllNamespacesAnnotation marks the ClusterRole and ClusterRoleBinding of
// AllNamespacesRoleFile. Bundles leave such objects out: OLM grants a CSV's
// permissions in the namespaces of the install mode itself (cluster-wide for
// AllNamespaces), so the namespaced rules are the CSV's permissions only.
const AllNamespacesAnnotation = "rbac.chartpilot.io/all-namespaces"

const (
	managerRole        = "manager-role"
	managerRoleBinding = "manager-rolebinding"
	allNamespacesName  = "-all-namespaces"
	// rbacNamespace is the namespace of config/'s namespaced objects, which
	// config/default's namespace replaces.
	rbacNamespace = "system"
)

// defaultSubjects are the operator's ServiceAccount as config/rbac names it.
var defaultSubjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "controller-manager", Namespace: rbacNamespace}}

// rbacFiles are the files of config/rbac that follow the derived rules:
// role.yaml, role_all_namespaces.yaml and, for a project written before
// the rules were split by scope (one ClusterRole), role_binding.yaml with
// a RoleBinding of the Role added and kustomization.yaml listing
// role_all_namespaces.yaml. pending are files about to be written, read
// before the project's.
func (g *generator) rbacFiles(res *rbac.Result, pending map[string][]byte) (map[string][]byte, error) {
	files := map[string][]byte{RoleFile: res.RoleYAML()}
	bindings, err := g.read(RoleBindingFile, pending)
	if err != nil {
		return nil, err
	}
	subjects, hasRoleBinding, err := managerBindings(bindings)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RoleBindingFile, err)
	}
	// A project without role_binding.yaml binds its roles its own way.
	if bindings != nil && !hasRoleBinding {
		rb, err := roleBindingYAML(subjects)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(bindings)) > 0 {
			bindings = append(bytes.TrimRight(bindings, "\n"), []byte("\n---\n")...)
		}
		files[RoleBindingFile] = append(bindings, rb...)
	}
	if files[AllNamespacesRoleFile], err = allNamespacesYAML(res, subjects); err != nil {
		return nil, err
	}
	kust, err := g.read(rbacKustomizationFile, pending)
	if err != nil || kust == nil {
		return files, err
	}
	// A project whose kustomization lists it (chartpilot's own, not an
	// adopted operator-sdk one, which has its own metrics RBAC).
	if bytes.Contains(kust, []byte("- "+filepath.Base(MetricsReaderRoleFile))) {
		if files[MetricsReaderRoleFile], err = metricsReaderYAML(g.project.ProjectName); err != nil {
			return nil, err
		}
	}
	listed, err := listResource(kust, filepath.Base(AllNamespacesRoleFile), filepath.Base(RoleBindingFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rbacKustomizationFile, err)
	}
	if !bytes.Equal(listed, kust) {
		files[rbacKustomizationFile] = listed
	}
	return files, nil
}

// read reads a project file, from pending when it is there; nil when absent.
func (g *generator) read(path string, pending map[string][]byte) ([]byte, error) {
	if data, ok := pending[path]; ok {
		return data, nil
	}
	data, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(path)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// managerBindings reads role_binding.yaml: the subjects bound to the
// ClusterRole manager-role (the operator's ServiceAccount; default when
// none is), and whether a RoleBinding binds the Role manager-role.
func managerBindings(data []byte) ([]rbacv1.Subject, bool, error) {
	subjects := defaultSubjects
	hasRoleBinding := false
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var b rbacv1.RoleBinding // a ClusterRoleBinding's fields are the same
		err := dec.Decode(&b)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		switch {
		case b.Kind == "ClusterRoleBinding" && b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == managerRole && len(b.Subjects) > 0:
			subjects = b.Subjects
		case b.Kind == "RoleBinding" && b.RoleRef.Kind == "Role" && b.RoleRef.Name == managerRole:
			hasRoleBinding = true
		}
	}
	return subjects, hasRoleBinding, nil
}

// rbacLabels are the labels of the RBAC objects chartpilot writes.
var rbacLabels = map[string]string{"app.kubernetes.io/managed-by": "kustomize"}

func rbacTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

// roleBindingYAML binds the Role manager-role to subjects.
func roleBindingYAML(subjects []rbacv1.Subject) ([]byte, error) {
	ns := subjects[0].Namespace
	if ns == "" {
		ns = rbacNamespace
	}
	rb := rbacv1.RoleBinding{TypeMeta: rbacTypeMeta("RoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: managerRoleBinding, Namespace: ns, Labels: rbacLabels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: managerRole},
		Subjects:   subjects}
	return marshalRBAC(rb)
}

// metricsReaderYAML is metrics_reader_role.yaml.
// project names it as config/default's namePrefix does.
func metricsReaderYAML(project string) ([]byte, error) {
	cr := rbacv1.ClusterRole{TypeMeta: rbacTypeMeta("ClusterRole"),
		ObjectMeta: metav1.ObjectMeta{Name: metricsauth.ReaderRole, Labels: rbacLabels}, Rules: metricsauth.ReaderRules()}
	out, err := marshalRBAC(cr)
	if err != nil {
		return nil, err
	}
	head := []byte(`# Generated by chartpilot: who may scrape the operator's metrics, which it
# serves over HTTPS to scrapers the API server authenticates and authorizes
# (--metrics-secure). Bind it to Prometheus's ServiceAccount, e.g.
#   kubectl create clusterrolebinding prometheus-metrics-reader \
#     --clusterrole=` + project + `-` + metricsauth.ReaderRole + ` --serviceaccount=monitoring:prometheus-k8s
`)
	return append(head, out...), nil
}

// allNamespacesYAML is role_all_namespaces.yaml: the Role's rules in a
// ClusterRole bound to subjects.
func allNamespacesYAML(res *rbac.Result, subjects []rbacv1.Subject) ([]byte, error) {
	rules := []rbacv1.PolicyRule{}
	if res.Role != nil {
		rules = append(rules, res.Role.Rules...)
	}
	ann := map[string]string{AllNamespacesAnnotation: "true"}
	name := managerRole + allNamespacesName
	cr := rbacv1.ClusterRole{TypeMeta: rbacTypeMeta("ClusterRole"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann, Labels: rbacLabels}, Rules: rules}
	crb := rbacv1.ClusterRoleBinding{TypeMeta: rbacTypeMeta("ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: managerRoleBinding + allNamespacesName, Annotations: ann, Labels: rbacLabels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects}
	head := []byte(`# Generated by chartpilot: the rules of role.yaml's Role (see there what needs
# each) in every namespace, for config/manager's operator, which watches all
# namespaces (WATCH_NAMESPACE ""). To run it in one namespace instead, set
# WATCH_NAMESPACE and drop this file from kustomization.yaml. Bundles leave
# these objects out (` + AllNamespacesAnnotation + `): OLM grants the CSV's
# permissions in the namespaces of the install mode itself.
`)
	a, err := marshalRBAC(cr)
	if err != nil {
		return nil, err
	}
	b, err := marshalRBAC(crb)
	if err != nil {
		return nil, err
	}
	return slices.Concat(head, a, []byte("---\n"), b), nil
}

func marshalRBAC(obj any) ([]byte, error) {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return bytes.Replace(out, []byte("  creationTimestamp: null\n"), nil, 1), nil
}

// listResource adds name to the resources of a kustomization (after
// `after` when listed), comments kept; data is returned unchanged when it
// lists name already.
func listResource(data []byte, name, after string) ([]byte, error) {
	root, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	res, err := root.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "resources"))
	if err != nil {
		return nil, err
	}
	seq := res.YNode()
	at := len(seq.Content)
	for i, n := range seq.Content {
		switch n.Value {
		case name:
			return data, nil
		case after:
			at = i + 1
		}
	}
	item := &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: name}
	seq.Content = slices.Insert(seq.Content, at, item)
	out, err := root.String()
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}
