package installer

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

const annotationsYAML = `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: tiny
  operators.operatorframework.io.bundle.channels.v1: alpha
`

// tinyCSV is a CSV with the given install modes (a comma-separated list),
// metadata annotations and install.spec lines besides its deployment.
func tinyCSV(modes, annotations, installSpec string) string {
	var im strings.Builder
	for _, m := range []string{"OwnNamespace", "SingleNamespace", "AllNamespaces"} {
		im.WriteString("  - {type: " + m + ", supported: " + boolString(strings.Contains(modes, m)) + "}\n")
	}
	return `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: tiny.v0.1.0
  annotations: {` + annotations + `}
spec:
  installModes:
` + im.String() + `  install:
    strategy: deployment
    spec:
` + installSpec + `      deployments:
      - name: tiny
        spec:
          selector: {matchLabels: {app: tiny}}
          template:
            metadata: {labels: {app: tiny}}
            spec:
              serviceAccountName: tiny
              containers: [{name: manager, image: example.com/tiny:v1}]
`
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func tinyBundle(t *testing.T, csv string, manifests map[string]string) *olmv1.Bundle {
	t.Helper()
	fsys := fstest.MapFS{"metadata/annotations.yaml": {Data: []byte(annotationsYAML)}, "manifests/csv.yaml": {Data: []byte(csv)}}
	for name, data := range manifests {
		fsys["manifests/"+name] = &fstest.MapFile{Data: []byte(data)}
	}
	b, err := olmv1.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const configMapsAll = `      permissions:
      - serviceAccountName: tiny
        rules:
        - {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
`

// rule is a rule in a short form for the table: "group/resource[names] verbs"
// or "URL verbs".
func rule(r rbacv1.PolicyRule) string {
	if len(r.NonResourceURLs) > 0 {
		return strings.Join(r.NonResourceURLs, ",") + " " + strings.Join(r.Verbs, ",")
	}
	s := strings.Join(r.APIGroups, ",") + "/" + strings.Join(r.Resources, ",")
	if len(r.ResourceNames) > 0 {
		s += "[" + strings.Join(r.ResourceNames, ",") + "]"
	}
	return s + " " + strings.Join(r.Verbs, ",")
}

func ruleStrings(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, rule(r))
	}
	return out
}

func TestRules(t *testing.T) {
	tests := []struct {
		name      string
		bundle    func(t *testing.T) *olmv1.Bundle
		opts      Options
		cluster   []string // the ClusterRole's rules, in order
		roles     map[string][]string
		warnings  []string // words of each warning
		wantError string
	}{
		{
			name: "a deployment alone",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("AllNamespaces", "", ""), nil)
			},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "olm.operatorframework.io/clusterextensions/finalizers[tiny] update"},
			roles: map[string][]string{"tiny-system": {"/serviceaccounts create", "apps/deployments create",
				"/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete"}},
		},
		{
			// The operator may do anything with ConfigMaps: holding that
			// (to grant it) covers creating and naming its own.
			name: "an operator rule covers the installer's",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("AllNamespaces", "", configMapsAll), map[string]string{
					"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tiny-config}\n"})
			},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "rbac.authorization.k8s.io/clusterrolebindings,clusterroles create,list,watch",
				"rbac.authorization.k8s.io/clusterrolebindings[tiny.v0.1.0-tiny-2p834lrzkfaleio0rsd4er4o6odkraf549qcpgxmh8x8] get,patch,delete",
				"rbac.authorization.k8s.io/clusterroles[tiny.v0.1.0-tiny-2p834lrzkfaleio0rsd4er4o6odkraf549qcpgxmh8x8] get,patch,delete",
				"olm.operatorframework.io/clusterextensions/finalizers[tiny] update", "/configmaps *"},
			roles: map[string][]string{"tiny-system": {"/serviceaccounts create", "apps/deployments create",
				"/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete"}},
		},
		{
			// In SingleNamespace mode the permissions are a Role in the
			// watched namespace: the installer holds them there only.
			name: "single namespace",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("SingleNamespace", "", configMapsAll), nil)
			},
			opts:    Options{Namespace: "ops", WatchNamespace: "apps", Extension: "tiny-apps"},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "rbac.authorization.k8s.io/rolebindings,roles list,watch", "olm.operatorframework.io/clusterextensions/finalizers[tiny-apps] update"},
			roles: map[string][]string{
				"apps": {"rbac.authorization.k8s.io/rolebindings,roles create",
					"rbac.authorization.k8s.io/rolebindings[tiny.v0.1.0-tiny-2p834lrzkfaleio0rsd4er4o6odkraf549qcpgxmh8x8] get,patch,delete",
					"rbac.authorization.k8s.io/roles[tiny.v0.1.0-tiny-2p834lrzkfaleio0rsd4er4o6odkraf549qcpgxmh8x8] get,patch,delete", "/configmaps *"},
				"ops": {"/serviceaccounts create", "apps/deployments create", "/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete"},
			},
		},
		{
			name: "bindings to the bundle's roles and to others",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("AllNamespaces", "", ""), map[string]string{
					"cr.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: tiny-reader}\nrules: [{nonResourceURLs: [/metrics], verbs: [get]}]\n",
					"crb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: tiny-reader}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tiny-reader}\nsubjects: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n",
					"rb.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: tiny-edit}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\nsubjects: [{kind: ServiceAccount, name: tiny}]\n",
				})
			},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "rbac.authorization.k8s.io/clusterrolebindings,clusterroles create,list,watch",
				"rbac.authorization.k8s.io/rolebindings list,watch",
				"rbac.authorization.k8s.io/clusterrolebindings[tiny-reader] get,patch,delete", "rbac.authorization.k8s.io/clusterroles[tiny-reader] get,patch,delete",
				"olm.operatorframework.io/clusterextensions/finalizers[tiny] update", "/metrics get"},
			roles: map[string][]string{"tiny-system": {"/serviceaccounts create", "apps/deployments create", "rbac.authorization.k8s.io/rolebindings create",
				"/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete", "rbac.authorization.k8s.io/rolebindings[tiny-edit] get,patch,delete",
				"rbac.authorization.k8s.io/clusterroles[edit] bind"}},
			warnings: []string{"RoleBinding tiny-edit binds ClusterRole edit, which the bundle does not make"},
		},
		{
			name: "an aggregated ClusterRole",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("AllNamespaces", "", ""), map[string]string{
					"agg.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: tiny-all}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {tiny: 'true'}}]}\nrules: []\n"})
			},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "rbac.authorization.k8s.io/clusterroles create,list,watch",
				"rbac.authorization.k8s.io/clusterroles[tiny-all] get,patch,delete", "olm.operatorframework.io/clusterextensions/finalizers[tiny] update",
				"rbac.authorization.k8s.io/clusterroles escalate"},
			roles: map[string][]string{"tiny-system": {"/serviceaccounts create", "apps/deployments create",
				"/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete"}},
			warnings: []string{"ClusterRole tiny-all aggregates other roles"},
		},
		{
			name: "the suggested namespace",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("AllNamespaces", "operatorframework.io/suggested-namespace: tiny-ops", ""), nil)
			},
			cluster: []string{"/serviceaccounts list,watch", "apps/deployments list,watch", "olm.operatorframework.io/clusterextensions/finalizers[tiny] update"},
			roles: map[string][]string{"tiny-ops": {"/serviceaccounts create", "apps/deployments create",
				"/serviceaccounts[tiny] get,patch,delete", "apps/deployments[tiny] get,patch,delete"}},
		},
		{
			name: "a bundle operator-controller refuses",
			bundle: func(t *testing.T) *olmv1.Bundle {
				return tinyBundle(t, tinyCSV("OwnNamespace", "", ""), nil)
			},
			wantError: "does not support AllNamespaces",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Rules(tt.opts, tt.bundle(t))
			if tt.wantError != "" {
				var refusal *olmv1.Refusal
				if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error = %v, want a refusal saying %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ruleStrings(r.ClusterRole.Rules); !slices.Equal(got, tt.cluster) {
				t.Errorf("ClusterRole rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.cluster, "\n"))
			}
			if len(r.Roles) != len(tt.roles) {
				t.Errorf("%d Roles, want %d", len(r.Roles), len(tt.roles))
			}
			for _, role := range r.Roles {
				if got := ruleStrings(role.Rules); !slices.Equal(got, tt.roles[role.Namespace]) {
					t.Errorf("Role in %s:\n%s\nwant:\n%s", role.Namespace, strings.Join(got, "\n"), strings.Join(tt.roles[role.Namespace], "\n"))
				}
			}
			if len(r.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d", r.Warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(r.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to say %q", i, r.Warnings[i], w)
				}
			}
			// Every binding names the installer ServiceAccount.
			ext := tt.opts.Extension
			if ext == "" {
				ext = "tiny"
			}
			if r.ServiceAccount.Name != ext+"-installer" || r.ClusterRoleBinding.Subjects[0].Name != r.ServiceAccount.Name {
				t.Errorf("ServiceAccount %s, ClusterRoleBinding subject %+v", r.ServiceAccount.Name, r.ClusterRoleBinding.Subjects)
			}
		})
	}
}

// TestWidgetRules checks the shape of the rules of the two-version test
// bundle the API server test proves: no verb beyond what operator-controller
// uses, names wherever the API allows them.
func TestWidgetRules(t *testing.T) {
	var bundles []*olmv1.Bundle
	for _, dir := range []string{"widget-0.1.0", "widget-0.2.0"} {
		b, err := olmv1.Load(os.DirFS("../olmv1/testdata/" + dir))
		if err != nil {
			t.Fatal(err)
		}
		bundles = append(bundles, b)
	}
	r, err := Rules(Options{Namespace: "widget-system"}, bundles...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != 29 {
		t.Errorf("%d rules, want 29:\n%s", r.Count(), strings.Join(ruleStrings(slices.Concat(r.ClusterRole.Rules, r.Roles[0].Rules)), "\n"))
	}
	held := heldRules(t, bundles...)
	for _, rl := range slices.Concat(r.ClusterRole.Rules, r.Roles[0].Rules) {
		if slices.ContainsFunc(held, func(h rbacv1.PolicyRule) bool { return equalRule(h, rl) }) {
			continue // the operator's, held to grant them
		}
		for _, v := range rl.Verbs {
			switch {
			case v == "escalate", v == "update" && rl.Resources[0] != ExtensionFinalizers:
				t.Errorf("rule %s: operator-controller does not %s", rule(rl), v)
			case slices.Contains([]string{"get", "patch", "delete", "bind", "update"}, v) && len(rl.ResourceNames) == 0:
				t.Errorf("rule %s: %s without names", rule(rl), v)
			}
		}
	}
	var buf bytes.Buffer
	if err := r.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if docs := strings.Count(buf.String(), "---\n"); docs != 5 {
		t.Errorf("YAML has %d documents, want 5 (ServiceAccount, ClusterRole and binding, Role and binding)", docs)
	}
}

// heldRules are the rules of the roles the bundles make.
func heldRules(t *testing.T, bundles ...*olmv1.Bundle) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, b := range bundles {
		objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: "widget-system"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
				out = append(out, rolesRules(t, o)...)
			}
		}
	}
	return out
}

func TestCovers(t *testing.T) {
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	tests := []struct {
		name  string
		owner []rbacv1.PolicyRule
		r     rbacv1.PolicyRule
		want  bool
	}{
		{"same", []rbacv1.PolicyRule{pods}, pods, true},
		{"verb wildcard", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}}}, pods, true},
		{"resource wildcard", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}, pods, true},
		{"other group", []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"pods"}, Verbs: []string{"*"}}}, pods, false},
		{"split over two rules", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}, pods, true},
		{"names do not cover all", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}, ResourceNames: []string{"a"}}}, pods, false},
		{"all covers names", []rbacv1.PolicyRule{pods}, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}, ResourceNames: []string{"a"}}, true},
		{"subresource", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/*"}, Verbs: []string{"get"}}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}, true},
		{"subresource is not the resource", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}, false},
		{"url prefix", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics*"}, Verbs: []string{"get"}}}, rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics/x"}, Verbs: []string{"get"}}, true},
		{"url", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}, rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := covers(tt.owner, tt.r); got != tt.want {
				t.Errorf("covers = %t, want %t", got, tt.want)
			}
		})
	}
}

// rolesRules are the rules of a Role or ClusterRole object.
func rolesRules(t *testing.T, o olmv1.Object) []rbacv1.PolicyRule {
	t.Helper()
	var role rbacv1.ClusterRole
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	return role.Rules
}
