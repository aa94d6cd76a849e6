package olm

import (
	"strings"
	"testing"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// healthy is an install OLM completed: every step passes.
func healthy() *Observed {
	return &Observed{
		Package: "demo", Namespace: "ns",
		OperatorGroups: []operatorsv1.OperatorGroup{og("demo", "ns")},
		Subscription: &v1alpha1.Subscription{
			ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
			Spec:       &v1alpha1.SubscriptionSpec{Package: "demo", CatalogSource: "demo-catalog", CatalogSourceNamespace: "ns"},
			Status: v1alpha1.SubscriptionStatus{State: v1alpha1.SubscriptionStateAtLatest, InstalledCSV: "demo.v0.1.0", CurrentCSV: "demo.v0.1.0",
				InstallPlanRef: &corev1.ObjectReference{Name: "install-1", Namespace: "ns"}},
		},
		CatalogSource: &v1alpha1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Name: "demo-catalog", Namespace: "ns"},
			Spec:       v1alpha1.CatalogSourceSpec{SourceType: v1alpha1.SourceTypeGrpc, Address: "127.0.0.1:50051"},
			Status:     v1alpha1.CatalogSourceStatus{GRPCConnectionState: &v1alpha1.GRPCConnectionState{LastObservedState: "READY"}},
		},
		InstallPlan: &v1alpha1.InstallPlan{
			ObjectMeta: metav1.ObjectMeta{Name: "install-1", Namespace: "ns"},
			Spec:       v1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{"demo.v0.1.0"}, Approval: v1alpha1.ApprovalAutomatic, Approved: true},
			Status:     v1alpha1.InstallPlanStatus{Phase: v1alpha1.InstallPlanPhaseComplete},
		},
		CSV: &v1alpha1.ClusterServiceVersion{
			ObjectMeta: metav1.ObjectMeta{Name: "demo.v0.1.0", Namespace: "ns"},
			Status:     v1alpha1.ClusterServiceVersionStatus{Phase: v1alpha1.CSVPhaseSucceeded, Reason: v1alpha1.CSVReasonInstallSuccessful},
		},
	}
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name string
		// change breaks the healthy install
		change func(o *Observed)
		// check is the finding that must not pass; empty means all pass
		check    string
		severity Severity
		message  string
		fix      string
	}{
		{name: "healthy", change: func(o *Observed) {}},
		{name: "no subscription", change: func(o *Observed) { o.Subscription, o.CatalogSource, o.InstallPlan, o.CSV = nil, nil, nil, nil },
			check: CheckSubscription, severity: Fail, message: "no Subscription for package demo in namespace ns", fix: "chartpilot olm subscribe demo -n ns"},
		{name: "no operator group", change: func(o *Observed) { o.OperatorGroups = nil },
			check: CheckOperatorGroup, severity: Fail, message: "has no OperatorGroup"},
		{name: "two operator groups", change: func(o *Observed) { o.OperatorGroups = append(o.OperatorGroups, og("other")) },
			check: CheckOperatorGroup, severity: Fail, message: "has 2 OperatorGroups (demo, other)", fix: "delete operatorgroup"},
		{name: "catalog source missing", change: func(o *Observed) { o.CatalogSource = nil },
			check: CheckCatalogSource, severity: Fail, message: "CatalogSource ns/demo-catalog does not exist"},
		{name: "catalog unreachable", change: func(o *Observed) {
			o.CatalogSource.Status.GRPCConnectionState.LastObservedState = "TRANSIENT_FAILURE"
		}, check: CheckCatalogSource, severity: Fail, message: "TRANSIENT_FAILURE: OLM cannot reach the registry at 127.0.0.1:50051", fix: "chartpilot catalog serve DIR --address 127.0.0.1:50051"},
		{name: "resolution failed", change: func(o *Observed) {
			o.Subscription.Status = v1alpha1.SubscriptionStatus{Conditions: []v1alpha1.SubscriptionCondition{{
				Type: v1alpha1.SubscriptionResolutionFailed, Status: corev1.ConditionTrue, Reason: "ConstraintsNotSatisfiable",
				Message: "no operators found in package demo in the catalog referenced by subscription demo"}}}
			o.InstallPlan, o.CSV = nil, nil
		}, check: CheckSubscription, severity: Fail, message: "ResolutionFailed: no operators found in package demo", fix: "chartpilot catalog render"},
		{name: "manual approval", change: func(o *Observed) {
			o.InstallPlan.Status.Phase, o.InstallPlan.Spec.Approved = v1alpha1.InstallPlanPhaseRequiresApproval, false
		}, check: CheckInstallPlan, severity: Warn, message: "RequiresApproval", fix: `kubectl -n ns patch installplan install-1 --type merge -p '{"spec":{"approved":true}}'`},
		{name: "install plan failed", change: func(o *Observed) {
			o.InstallPlan.Status.Phase = v1alpha1.InstallPlanPhaseFailed
			o.InstallPlan.Status.Conditions = []v1alpha1.InstallPlanCondition{{Type: v1alpha1.InstallPlanInstalled, Status: corev1.ConditionFalse, Reason: v1alpha1.InstallPlanReasonComponentFailed, Message: "error creating csv demo.v0.1.0"}}
		}, check: CheckInstallPlan, severity: Fail, message: "Failed: InstallComponentFailed: error creating csv demo.v0.1.0"},
		{name: "requirements not met", change: func(o *Observed) {
			o.CSV.Status = v1alpha1.ClusterServiceVersionStatus{Phase: v1alpha1.CSVPhasePending, Reason: v1alpha1.CSVReasonRequirementsNotMet, RequirementStatus: []v1alpha1.RequirementStatus{
				{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.demo.example.com", Status: v1alpha1.RequirementStatusReasonPresent},
				{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "gadgets.other.example.com", Status: v1alpha1.RequirementStatusReasonNotPresent, Message: "CRD is not present"},
			}}
		}, check: CheckCSV, severity: Fail, message: "Pending, RequirementsNotMet: CustomResourceDefinition gadgets.other.example.com NotPresent (CRD is not present)"},
		{name: "csv failed", change: func(o *Observed) {
			o.CSV.Status = v1alpha1.ClusterServiceVersionStatus{Phase: v1alpha1.CSVPhaseFailed, Reason: v1alpha1.CSVReasonComponentUnhealthy, Message: "installing: deployment demo-controller-manager not ready"}
		}, check: CheckCSV, severity: Fail, message: "Failed, ComponentUnhealthy: installing: deployment demo-controller-manager not ready", fix: "chartpilot doctor"},
		{name: "csv not created yet", change: func(o *Observed) { o.CSV = nil },
			check: CheckCSV, severity: Warn, message: "not created yet"},
		{name: "catalog image serves no packages", change: func(o *Observed) {
			o.CatalogSource.Spec.Address, o.CatalogSource.Spec.Image = "", "registry.local/empty-catalog:v1"
			o.Catalog = &CatalogContent{Packages: []string{}}
		}, check: CheckCatalogSource, severity: Fail, message: "the catalog of CatalogSource ns/demo-catalog (image registry.local/empty-catalog:v1) serves no packages", fix: "make catalog-build catalog-push"},
		{name: "catalog serves other packages", change: func(o *Observed) { o.Catalog = &CatalogContent{Packages: []string{"a", "b"}} },
			check: CheckCatalogSource, severity: Fail, message: "(127.0.0.1:50051) serves no package demo (it serves a, b)", fix: "chartpilot catalog serve DIR --address 127.0.0.1:50051"},
		{name: "catalog serves the package", change: func(o *Observed) { o.Catalog = &CatalogContent{Packages: []string{"demo"}} }},
		// A registry that cannot be asked is OLM's to judge: READY stands.
		{name: "catalog not asked", change: func(o *Observed) { o.CatalogError = "no ready registry pod" }},
		{name: "deprecated channel", change: func(o *Observed) {
			o.Subscription.Status.Conditions = []v1alpha1.SubscriptionCondition{{Type: v1alpha1.SubscriptionDeprecated, Status: corev1.ConditionTrue, Message: "channel alpha is deprecated: use stable"}}
		}, check: CheckSubscription, severity: Warn, message: "Deprecated: channel alpha is deprecated: use stable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := healthy()
			tt.change(o)
			found := false
			for _, f := range Diagnose(o) {
				if f.Check != tt.check {
					if f.Severity != Pass {
						t.Errorf("unexpected %s: %+v", f.Severity, f)
					}
					continue
				}
				found = true
				if f.Severity != tt.severity || !strings.Contains(f.Message, tt.message) || !strings.Contains(f.Fix, tt.fix) {
					t.Errorf("finding %+v\nwant %s with %q, fix %q", f, tt.severity, tt.message, tt.fix)
				}
			}
			if tt.check != "" && !found {
				t.Errorf("no %s finding", tt.check)
			}
		})
	}
}

func TestReportSummaryAndText(t *testing.T) {
	r := healthy().Report()
	if got, want := r.Summary(), "catalog READY, subscription AtLatestKnown, installplan install-1 Complete, csv demo.v0.1.0 Succeeded (InstallSucceeded)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "package demo in namespace ns: installed (demo.v0.1.0)\n") || strings.Contains(b.String(), "fix:") {
		t.Errorf("text:\n%s", b.String())
	}
}
