package extension

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// observed is an observation of extension demo (package demo, installer
// demo-installer in team) whose Progressing condition says msg.
func observed(reason, msg string, catalogs ...Catalog) *Observation {
	ext := &Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 2},
		Spec: ExtensionSpec{Namespace: "team", ServiceAccount: &ServiceAccount{Name: "demo-installer"},
			Source: ExtensionSource{SourceType: SourceTypeCatalog, Catalog: &CatalogFilter{PackageName: "demo", Version: ">=2.0.0",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{MetadataNameLabel: "demo-catalog"}}}}},
	}
	if reason != "" {
		status := metav1.ConditionTrue
		if reason == ReasonBlocked || reason == ReasonInvalidConfiguration {
			status = metav1.ConditionFalse
		}
		ext.Status.Conditions = []metav1.Condition{{Type: TypeProgressing, Status: status, Reason: reason, Message: msg, ObservedGeneration: 2}}
	}
	if catalogs == nil {
		catalogs = []Catalog{servingCatalog()}
	}
	return &Observation{Name: "demo", Extension: ext, Catalogs: catalogs, NamespaceFound: true, ServiceAccountFound: true}
}

func servingCatalog() Catalog {
	return Catalog{ObjectMeta: metav1.ObjectMeta{Name: "demo-catalog"},
		Spec:   CatalogSpec{Source: CatalogSource{Type: SourceTypeImage, Image: &ImageSource{Ref: "127.0.0.1:5000/demo-catalog:v1"}}},
		Status: CatalogStatus{Conditions: []metav1.Condition{{Type: TypeServing, Status: metav1.ConditionTrue, Reason: ReasonAvailable}}}}
}

// The messages are operator-controller v1.2.0's and catalogd's, as they
// format them.
func TestDiagnose(t *testing.T) {
	unpullable := servingCatalog()
	unpullable.Status.Conditions = []metav1.Condition{
		{Type: TypeServing, Status: metav1.ConditionFalse, Reason: "Unavailable"},
		{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonRetrying,
			Message: `source catalog content: error creating image source: reading manifest 1 in 127.0.0.1:5000/demo-catalog: manifest unknown`},
	}
	unpacking := servingCatalog()
	unpacking.Status.Conditions = nil
	tests := []struct {
		name string
		obs  *Observation
		// want are the problems' kinds, in order; in are substrings of
		// the first one's message or fix.
		want []ProblemKind
		in   []string
	}{
		{name: "unknown package", obs: observed(ReasonRetrying, `no bundles found for package "demo"`),
			want: []ProblemKind{ProblemPackageNotFound}, in: []string{"check the name", "package demo"}},
		{name: "no version in range", obs: observed(ReasonRetrying, `no bundles found for package "demo" matching version ">=2.0.0"`),
			want: []ProblemKind{ProblemNoVersionMatches}, in: []string{`version range ">=2.0.0"`, "chartpilot olm v1 upgrade demo --version"}},
		{name: "no bundle in the channels", obs: observed(ReasonRetrying, `no bundles found for package "demo" in channels [beta]`),
			want: []ProblemKind{ProblemNoVersionMatches}},
		{name: "no upgrade edge", obs: observed(ReasonRetrying, `error upgrading from currently installed version "0.1.0": no bundles found for package "demo" matching version ">=2.0.0"`),
			want: []ProblemKind{ProblemNoUpgradePath}, in: []string{"SelfCertified", "replaces or skips"}},
		{name: "installer ServiceAccount missing, said once", obs: func() *Observation {
			o := observed(ReasonRetrying, "installation cannot proceed due to missing ServiceAccount")
			o.ServiceAccountFound = false
			return o
		}(), want: []ProblemKind{ProblemServiceAccountMissing}, in: []string{"team/demo-installer does not exist", "kubectl -n team create serviceaccount demo-installer"}},
		{name: "namespace missing too", obs: func() *Observation {
			o := observed(ReasonRetrying, "installation cannot proceed due to missing ServiceAccount")
			o.ServiceAccountFound, o.NamespaceFound = false, false
			return o
		}(), want: []ProblemKind{ProblemNamespaceMissing, ProblemServiceAccountMissing}},
		{name: "catalog image not pullable explains no bundles", obs: observed(ReasonRetrying, `no bundles found for package "demo"`, unpullable),
			want: []ProblemKind{ProblemCatalogUnpullable}, in: []string{"catalogd cannot pull the image 127.0.0.1:5000/demo-catalog:v1", "manifest unknown"}},
		{name: "a catalog not served yet is said once", obs: observed(ReasonRetrying, `error walking catalogs: error getting package "demo" from catalog "demo-catalog": catalog "demo-catalog" is not being served`, unpullable),
			want: []ProblemKind{ProblemCatalogUnpullable}},
		{name: "catalog not unpacked yet", obs: observed("", "", unpacking),
			want: []ProblemKind{ProblemCatalogNotServing}, in: []string{"none of the ClusterCatalogs (demo-catalog) serves yet"}},
		{name: "no catalog matches", obs: observed(ReasonRetrying, `no bundles found for package "demo"`, []Catalog{}...),
			want: []ProblemKind{ProblemNoCatalog}, in: []string{"selector olm.operatorframework.io/metadata.name=demo-catalog"}},
		{name: "no AllNamespaces install mode", obs: observed(ReasonRetrying, `supported install modes [OwnNamespace] do not support targeting all namespaces for resolved bundle "demo.v0.1.0" with version "0.1.0"`),
			want: []ProblemKind{ProblemBundleUnsupported}, in: []string{"{type: AllNamespaces, supported: true}"}},
		{name: "webhooks", obs: observed(ReasonRetrying, `webhookDefinitions are not supported for resolved bundle "demo.v0.1.0" with version "0.1.0"`),
			want: []ProblemKind{ProblemBundleUnsupported}, in: []string{"spec.webhookdefinitions"}},
		{name: "dependencies", obs: observed(ReasonRetrying, `validating bundle "demo.v0.1.0": bundle "demo.v0.1.0" has a dependency declared via property "olm.package.required" which is currently not supported`),
			want: []ProblemKind{ProblemBundleUnsupported}, in: []string{"resolves no dependencies"}},
		{name: "CRD upgrade safety", obs: observed(ReasonRetrying, `validating upgrade for CRD "widgets.demo.example.com" failed: CustomResourceDefinition widgets.demo.example.com failed upgrade safety validation. "NoScopeChange" validation failed: scope changed from "Namespaced" to "Cluster" for resolved bundle "demo.v0.3.0" with version "0.3.0"`),
			want: []ProblemKind{ProblemUpgradeUnsafe}, in: []string{"widgets.demo.example.com", "--crd-upgrade-safety-enforcement None"}},
		{name: "a rule the installer lacks is named", obs: observed(ReasonRetrying, `failed to get release state using server-side dry-run: Unable to continue with install: could not get information about the resource ServiceAccount "demo-operator" in namespace "team": serviceaccounts "demo-operator" is forbidden: User "system:serviceaccount:team:demo-installer" cannot get resource "serviceaccounts" in API group "" in the namespace "team" for resolved bundle "demo.v0.1.0" with version "0.1.0"`),
			want: []ProblemKind{ProblemPermissionDenied}, in: []string{"may not get core serviceaccounts named demo-operator in namespace team", "installer ServiceAccount team/demo-installer"}},
		{name: "a cluster-wide rule", obs: observed(ReasonRetrying, `customresourcedefinitions.apiextensions.k8s.io "widgets.demo.example.com" is forbidden: User "system:serviceaccount:team:demo-installer" cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`),
			want: []ProblemKind{ProblemPermissionDenied}, in: []string{"may not create apiextensions.k8s.io customresourcedefinitions named widgets.demo.example.com cluster-wide"}},
		{name: "a role granting what the installer does not hold", obs: observed(ReasonRetrying, `clusterroles.rbac.authorization.k8s.io "demo-metrics-reader" is forbidden: user "system:serviceaccount:team:demo-installer" (groups=["system:serviceaccounts" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{NonResourceURLs:["/metrics"], Verbs:["get"]}`),
			want: []ProblemKind{ProblemPermissionDenied}, in: []string{"may not grant what it does not hold: get /metrics"}},
		{name: "finalizers of the ClusterExtension", obs: observed(ReasonRetrying, `serviceaccounts "demo-operator" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>`),
			want: []ProblemKind{ProblemPermissionDenied}, in: []string{"may not update olm.operatorframework.io clusterextensions/finalizers"}},
		{name: "bundle image not pullable", obs: observed(ReasonRetrying, `error creating image source: pinging container registry 127.0.0.1:5000: connection refused for resolved bundle "demo.v0.1.0" with version "0.1.0"`),
			want: []ProblemKind{ProblemBundleUnpullable}, in: []string{"chartpilot bundle push"}},
		{name: "a terminal error", obs: observed(ReasonBlocked, "something final"), want: []ProblemKind{ProblemBlocked}},
		{name: "not reported yet", obs: observed("", ""), want: []ProblemKind{ProblemRetrying}, in: []string{"has not reported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diagnose(tt.obs)
			var kinds []string
			for _, p := range got {
				kinds = append(kinds, string(p.Kind))
			}
			var want []string
			for _, k := range tt.want {
				want = append(want, string(k))
			}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Fatalf("problems %v, want %v: %+v", kinds, want, got)
			}
			for _, s := range tt.in {
				if !strings.Contains(got[0].Message+" "+got[0].Fix, s) {
					t.Errorf("problem lacks %q:\n%s\nfix: %s", s, got[0].Message, got[0].Fix)
				}
			}
		})
	}
}

// Where the message tells nothing known, the reason decides: a terminal
// error (Progressing False) is one operator-controller does not retry.
func TestClassifyByReason(t *testing.T) {
	for _, tt := range []struct {
		reason  string
		msg     string
		want    ProblemKind
		meaning string
	}{
		{ReasonRetrying, "something new", ProblemRetrying, "keeps retrying"},
		{ReasonBlocked, "something final", ProblemBlocked, "a terminal error"},
		{ReasonInvalidConfiguration, "invalid ClusterExtension configuration: watchNamespace", ProblemInvalidConfiguration, "a terminal error"},
		{ReasonBlocked, `webhookDefinitions are not supported for resolved bundle "demo.v0.1.0"`, ProblemBundleUnsupported, "a terminal error"},
		{ReasonInvalidConfiguration, noBundles + ` "demo"`, ProblemPackageNotFound, "a terminal error"},
	} {
		t.Run(tt.reason+" "+tt.msg, func(t *testing.T) {
			o := observed(tt.reason, tt.msg)
			prog := &o.Extension.Status.Conditions[0]
			if got := classify(prog, o.Extension); got.Kind != tt.want {
				t.Errorf("classify = %s, want %s", got.Kind, tt.want)
			}
			if got := conditionMeaning(*prog, o.Extension); !strings.Contains(got, tt.meaning) {
				t.Errorf("meaning %q, want %q in it", got, tt.meaning)
			}
			if got := blocked(o); got != (prog.Status == metav1.ConditionFalse) {
				t.Errorf("blocked = %v for Progressing %s %s", got, prog.Status, prog.Reason)
			}
		})
	}
}

var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

// Each group of words of each message problem is matched by it: none is
// hidden by one before it.
func TestMessageProblemsReachable(t *testing.T) {
	ext := observed("", "").Extension
	ext.Spec.Source.Catalog.Channels = []string{"beta"}
	for i, m := range messageProblems {
		for _, words := range m.words {
			msg := strings.Join(words, " ... ")
			j := slices.IndexFunc(messageProblems, func(m messageProblem) bool { return m.matches(msg) })
			if j != i {
				t.Errorf("%q is matched by problem %d (%s), want %d (%s)", msg, j, messageProblems[j].kind, i, m.kind)
			}
		}
		if fix := fillIn(m.fix, ext); fix == "" || placeholder.MatchString(fix) {
			t.Errorf("problem %d (%s): fix %q, want one with no placeholder left", i, m.kind, fix)
		}
	}
}

// Installed holds only when operator-controller reached the current spec.
func TestReportInstalled(t *testing.T) {
	installed := func(progressGen int64) *Observation {
		o := observed(ReasonSucceeded, "desired state reached")
		o.Extension.Status.Conditions[0].ObservedGeneration = progressGen
		o.Extension.Status.Conditions = append(o.Extension.Status.Conditions,
			metav1.Condition{Type: TypeInstalled, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, ObservedGeneration: progressGen})
		o.Extension.Status.Install = &InstallStatus{Bundle: BundleMetadata{Name: "demo.v0.1.0", Version: "0.1.0"}}
		return o
	}
	r := installed(2).Report()
	if !r.Installed || len(r.Problems) != 0 || r.Summary() != "demo installed: demo.v0.1.0 0.1.0" {
		t.Errorf("report of an installed extension: %+v", r)
	}
	r = installed(1).Report()
	if r.Installed || !r.Conditions[0].Stale {
		t.Errorf("report of a spec not reached yet: %+v", r)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ClusterExtension demo (package demo, namespace team, installer demo-installer)", "catalog demo-catalog (127.0.0.1:5000/demo-catalog:v1): serving",
		"Installed=True Succeeded (of an older spec): a bundle is installed", "installed bundle: demo.v0.1.0 0.1.0"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, b.String())
		}
	}
	missing := (&Observation{Name: "gone"}).Report()
	if len(missing.Problems) != 1 || missing.Problems[0].Kind != ProblemNotFound {
		t.Errorf("report of a missing extension: %+v", missing)
	}
}
