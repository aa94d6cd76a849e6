package extension

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestNewPlan(t *testing.T) {
	rules := &InstallerRules{
		Cluster:    []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}}},
		Namespaced: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"create"}}},
	}
	derive := func(context.Context, InstallerRequest) (InstallerRules, error) { return *rules, nil }
	base := InstallOptions{Package: "demo", Namespace: "team", CatalogImage: "127.0.0.1:5000/demo-catalog:v1", InstallerRules: derive}
	with := func(f func(*InstallOptions)) InstallOptions {
		o := base
		f(&o)
		return o
	}
	tests := []struct {
		name     string
		opts     InstallOptions
		rules    *InstallerRules
		nsExists bool
		// kinds are the objects in apply order, as kind/name.
		kinds []string
		// yaml are substrings of the objects' YAML.
		yaml    []string
		notYAML []string
		wantErr string
	}{
		{name: "derived rules: a ClusterRole and a Role, each bound", opts: base, rules: rules,
			kinds: []string{"Namespace/team", "ClusterCatalog/demo-catalog", "ServiceAccount/demo-installer", "ClusterRole/demo-installer",
				"ClusterRoleBinding/demo-installer", "Role/demo-installer", "RoleBinding/demo-installer", "ClusterExtension/demo"},
			// The core API group "" stays in the rules.
			yaml: []string{"apiGroups:\n  - \"\"", "olm.operatorframework.io/metadata.name: demo-catalog", "pollIntervalMinutes: 10",
				"serviceAccount:\n    name: demo-installer", "olm.chartpilot.io/extension: demo", "app.kubernetes.io/managed-by: chartpilot"},
			notYAML: []string{"creationTimestamp", "status:"}},
		{name: "a ClusterRole of the user's is bound, no rules of its own",
			opts: with(func(o *InstallOptions) { o.InstallerClusterRole, o.InstallerRules = "cluster-admin", nil }), nsExists: true,
			kinds: []string{"ClusterCatalog/demo-catalog", "ServiceAccount/demo-installer", "ClusterRoleBinding/demo-installer", "ClusterExtension/demo"},
			yaml:  []string{"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin"}},
		{name: "an existing ServiceAccount: no RBAC",
			opts: with(func(o *InstallOptions) {
				o.ExistingServiceAccount, o.ServiceAccount, o.InstallerRules = true, "mine", nil
			}),
			kinds: []string{"Namespace/team", "ClusterCatalog/demo-catalog", "ClusterExtension/demo"}, yaml: []string{"name: mine"}},
		{name: "the cluster's catalogs by selector, a version range, channels, policies",
			opts: with(func(o *InstallOptions) {
				o.CatalogImage, o.CatalogSelector, o.Version, o.Channels = "", "tier=prod", ">=0.1.0 <0.3.0", []string{"stable"}
				o.UpgradeConstraintPolicy, o.CRDUpgradeSafety, o.Name = UpgradeSelfCertified, CRDSafetyNone, "demo-prod"
			}), rules: rules, nsExists: true,
			kinds: []string{"ServiceAccount/demo-prod-installer", "ClusterRole/demo-prod-installer", "ClusterRoleBinding/demo-prod-installer",
				"Role/demo-prod-installer", "RoleBinding/demo-prod-installer", "ClusterExtension/demo-prod"},
			yaml: []string{"matchLabels:\n          tier: prod", "version: '>=0.1.0 <0.3.0'", "channels:\n      - stable", "upgradeConstraintPolicy: SelfCertified",
				"crdUpgradeSafety:\n        enforcement: None", "packageName: demo"}},
		{name: "a catalog by digest is not polled",
			opts: with(func(o *InstallOptions) { o.CatalogImage = "127.0.0.1:5000/c@sha256:" + strings.Repeat("a", 64) }), rules: rules, nsExists: true,
			kinds:   []string{"ClusterCatalog/demo-catalog", "ServiceAccount/demo-installer", "ClusterRole/demo-installer", "ClusterRoleBinding/demo-installer", "Role/demo-installer", "RoleBinding/demo-installer", "ClusterExtension/demo"},
			notYAML: []string{"pollIntervalMinutes"}},
		{name: "no RBAC at all is refused", opts: with(func(o *InstallOptions) { o.InstallerRules = nil }), wantErr: "the installer ServiceAccount needs RBAC"},
		{name: "a catalog image and a selector", opts: with(func(o *InstallOptions) { o.CatalogSelector = "a=b" }), wantErr: "does not go with a catalog selector"},
		{name: "a bad version range", opts: with(func(o *InstallOptions) { o.Version = "one point two" }), wantErr: `version range "one point two"`},
		{name: "a bad policy", opts: with(func(o *InstallOptions) { o.UpgradeConstraintPolicy = "Always" }), wantErr: "want CatalogProvided or SelfCertified"},
		{name: "a bad namespace", opts: with(func(o *InstallOptions) { o.Namespace = "Team" }), wantErr: `namespace "Team"`},
		{name: "a bad catalog image", opts: with(func(o *InstallOptions) { o.CatalogImage = "UPPER/case:x" }), wantErr: `catalog image "UPPER/case:x"`},
		{name: "no namespace", opts: with(func(o *InstallOptions) { o.Namespace = "" }), wantErr: "no namespace"},
		{name: "OLM v1 that ignores spec.serviceAccount: no installer, no RBAC, no serviceAccount",
			opts: with(func(o *InstallOptions) { o.Features, o.InstallerRules = &Features{}, nil }), nsExists: true,
			kinds: []string{"ClusterCatalog/demo-catalog", "ClusterExtension/demo"}, notYAML: []string{"serviceAccount", "config:"}},
		{name: "a watch namespace where the cluster takes spec.config",
			opts: with(func(o *InstallOptions) { o.Features, o.WatchNamespace = &Features{Config: true}, "apps" }), nsExists: true,
			kinds: []string{"ClusterCatalog/demo-catalog", "ClusterExtension/demo"},
			yaml:  []string{"config:\n    configType: Inline\n    inline:\n      watchNamespace: apps"}},
		{name: "a watch namespace where the cluster has no spec.config",
			opts: with(func(o *InstallOptions) {
				o.Features, o.WatchNamespace = &Features{InstallerServiceAccount: true}, "apps"
			}), rules: rules,
			wantErr: "--feature-gates=SingleOwnNamespaceInstallSupport=true"},
		{name: "a bad watch namespace", opts: with(func(o *InstallOptions) { o.Features, o.WatchNamespace = &Features{Config: true}, "Apps" }),
			wantErr: `watch namespace "Apps"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.opts, tt.rules, tt.nsExists)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objs, err := p.Objects()
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var all strings.Builder
			for _, o := range objs {
				kinds = append(kinds, o.GetKind()+"/"+o.GetName())
				data, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				all.Write(data)
			}
			if strings.Join(kinds, " ") != strings.Join(tt.kinds, " ") {
				t.Errorf("objects = %v, want %v", kinds, tt.kinds)
			}
			for _, w := range tt.yaml {
				if !strings.Contains(all.String(), w) {
					t.Errorf("objects lack %q:\n%s", w, all.String())
				}
			}
			for _, w := range tt.notYAML {
				if strings.Contains(all.String(), w) {
					t.Errorf("objects hold %q:\n%s", w, all.String())
				}
			}
		})
	}
}
