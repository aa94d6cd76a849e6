package olm

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	goldenfile "github.com/chartpilot/chartpilot/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func og(name string, targets ...string) operatorsv1.OperatorGroup {
	return operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}}
}

func modes(ms ...v1alpha1.InstallModeType) v1alpha1.InstallModeSet {
	s := v1alpha1.InstallModeSet{}
	for _, m := range ms {
		s[m] = true
	}
	return s
}

func TestNewPlan(t *testing.T) {
	base := SubscribeOptions{Package: "demo", Namespace: "ns", CatalogAddress: "127.0.0.1:50051"}
	tests := []struct {
		name string
		// opts changes base
		opts     func(o *SubscribeOptions)
		existing []operatorsv1.OperatorGroup
		// wantMode is the install mode; wantTargets the OperatorGroup's
		wantMode    v1alpha1.InstallModeType
		wantTargets []string
		wantReuse   bool
		wantErr     error
		wantMsg     string
	}{
		{name: "modes unknown: OwnNamespace", wantMode: v1alpha1.InstallModeTypeOwnNamespace, wantTargets: []string{"ns"}},
		{name: "OwnNamespace preferred", opts: func(o *SubscribeOptions) {
			o.SupportedModes = modes(v1alpha1.InstallModeTypeAllNamespaces, v1alpha1.InstallModeTypeOwnNamespace)
		}, wantMode: v1alpha1.InstallModeTypeOwnNamespace, wantTargets: []string{"ns"}},
		{name: "AllNamespaces only", opts: func(o *SubscribeOptions) { o.SupportedModes = modes(v1alpha1.InstallModeTypeAllNamespaces) }, wantMode: v1alpha1.InstallModeTypeAllNamespaces},
		{name: "SingleNamespace only needs a target", opts: func(o *SubscribeOptions) { o.SupportedModes = modes(v1alpha1.InstallModeTypeSingleNamespace) },
			wantErr: ErrUnsupportedInstallMode, wantMsg: "supports only SingleNamespace"},
		{name: "SingleNamespace with a target", opts: func(o *SubscribeOptions) {
			o.InstallMode, o.TargetNamespace = v1alpha1.InstallModeTypeSingleNamespace, "apps"
		}, wantMode: v1alpha1.InstallModeTypeSingleNamespace, wantTargets: []string{"apps"}},
		{name: "SingleNamespace on its own namespace is OwnNamespace", opts: func(o *SubscribeOptions) {
			o.InstallMode, o.TargetNamespace = v1alpha1.InstallModeTypeSingleNamespace, "ns"
		}, wantMode: v1alpha1.InstallModeTypeOwnNamespace, wantTargets: []string{"ns"}},
		{name: "asked mode unsupported", opts: func(o *SubscribeOptions) {
			o.InstallMode, o.SupportedModes = v1alpha1.InstallModeTypeAllNamespaces, modes(v1alpha1.InstallModeTypeOwnNamespace)
		}, wantErr: ErrUnsupportedInstallMode, wantMsg: "supports OwnNamespace, not AllNamespaces"},
		{name: "existing group gives the mode", existing: []operatorsv1.OperatorGroup{og("global")}, wantMode: v1alpha1.InstallModeTypeAllNamespaces, wantReuse: true},
		{name: "existing multi-namespace group reused", existing: []operatorsv1.OperatorGroup{og("multi", "a", "b")}, wantMode: v1alpha1.InstallModeTypeMultiNamespace, wantTargets: []string{"a", "b"}, wantReuse: true},
		{name: "existing own group reused", existing: []operatorsv1.OperatorGroup{og("mine", "ns")}, opts: func(o *SubscribeOptions) { o.InstallMode = v1alpha1.InstallModeTypeOwnNamespace },
			wantMode: v1alpha1.InstallModeTypeOwnNamespace, wantTargets: []string{"ns"}, wantReuse: true},
		{name: "existing group of the wrong mode", existing: []operatorsv1.OperatorGroup{og("global")}, opts: func(o *SubscribeOptions) { o.InstallMode = v1alpha1.InstallModeTypeOwnNamespace },
			wantErr: ErrIncompatibleOperatorGroup, wantMsg: "OperatorGroup global in namespace ns targets all namespaces, install mode OwnNamespace needs [ns]; choose --install-mode AllNamespaces"},
		{name: "two groups", existing: []operatorsv1.OperatorGroup{og("b"), og("a")}, wantErr: ErrTooManyOperatorGroups, wantMsg: "has OperatorGroups a, b"},
		{name: "no catalog", opts: func(o *SubscribeOptions) { o.CatalogAddress = "" }, wantMsg: "set either a catalog address or a catalog image"},
		{name: "bad package name", opts: func(o *SubscribeOptions) { o.Package = "Demo_Op" }, wantMsg: `package "Demo_Op"`},
		{name: "bad approval", opts: func(o *SubscribeOptions) { o.Approval = "Later" }, wantMsg: `approval "Later": want Automatic or Manual`},
		{name: "target without SingleNamespace", opts: func(o *SubscribeOptions) { o.TargetNamespace = "x" }, wantMsg: "a target namespace is for the SingleNamespace install mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.opts != nil {
				tt.opts(&opts)
			}
			p, err := NewPlan(opts, tt.existing)
			if tt.wantMsg != "" || tt.wantErr != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.InstallMode != tt.wantMode || p.ReuseOperatorGroup != tt.wantReuse || strings.Join(p.OperatorGroup.Spec.TargetNamespaces, ",") != strings.Join(tt.wantTargets, ",") {
				t.Errorf("mode %s (%s), reuse %v, targets %v; want %s, %v, %v", p.InstallMode, p.InstallModeReason, p.ReuseOperatorGroup, p.OperatorGroup.Spec.TargetNamespaces, tt.wantMode, tt.wantReuse, tt.wantTargets)
			}
			objs, err := p.Objects()
			if err != nil {
				t.Fatal(err)
			}
			wantKinds := "CatalogSource OperatorGroup Subscription"
			if tt.wantReuse {
				wantKinds = "CatalogSource Subscription"
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if got := strings.Join(kinds, " "); got != wantKinds {
				t.Errorf("objects %s, want %s", got, wantKinds)
			}
		})
	}
}

// The objects as printed by subscribe --dry-run: no status, no empty fields.
func TestPlanObjectsGolden(t *testing.T) {
	tests := map[string]SubscribeOptions{
		"address": {Package: "demo", Namespace: "ns", CatalogAddress: "127.0.0.1:50051", Channel: "stable", StartingCSV: "demo.v0.1.0"},
		"image":   {Package: "demo", Namespace: "ns", CatalogImage: "quay.io/me/demo-catalog:latest", Approval: v1alpha1.ApprovalManual, InstallMode: v1alpha1.InstallModeTypeAllNamespaces},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := NewPlan(opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := p.Objects()
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, o := range objs {
				data, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				got = append(append(got, "---\n"...), data...)
			}
			goldenfile.File(t, filepath.Join("testdata", "plan-"+name+".yaml"), got, *update)
		})
	}
}

// Empty fields go; zero numbers, false and "" in a list (the core API
// group of a rule) stay.
func TestPruneEmpty(t *testing.T) {
	in := map[string]any{"a": "", "b": map[string]any{"c": nil, "d": []any{}}, "e": "x", "f": []any{map[string]any{"g": "y", "h": ""}}, "i": int64(0), "j": false, "k": []any{""}}
	got, _ := yaml.Marshal(pruneEmpty(in))
	want := "e: x\nf:\n- g: \"y\"\ni: 0\nj: false\nk:\n- \"\"\n"
	if string(got) != want {
		t.Errorf("pruneEmpty = %s, want %s", got, want)
	}
}
