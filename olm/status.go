package olm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/podhealth"
)

// ErrNotSubscribed means no Subscription in the namespace installs the package.
var ErrNotSubscribed = errors.New("no Subscription for the package")

// Observed is the chain of objects OLM walks to install one package: the
// Subscription, its CatalogSource, its latest InstallPlan, the CSV it
// installs, and the namespace's OperatorGroups. Missing objects are nil.
type Observed struct {
	Package, Namespace string
	Subscription       *v1alpha1.Subscription
	CatalogSource      *v1alpha1.CatalogSource
	InstallPlan        *v1alpha1.InstallPlan
	CSV                *v1alpha1.ClusterServiceVersion
	OperatorGroups     []operatorsv1.OperatorGroup
	// CatalogPods serve a CatalogSource of an image; OperatorPods are the
	// CSV's Deployments' pods: where an install on a real node fails
	// (an image that cannot be pulled, a crashing container).
	CatalogPods, OperatorPods []corev1.Pod
	// Catalog is what the CatalogSource's registry serves, and
	// CatalogError why it could not be asked; both empty until
	// ObserveCatalog asks.
	Catalog      *CatalogContent
	CatalogError string
}

// Observe reads the objects for pkg in ns. It changes nothing; a missing
// object is not an error (Diagnose says what it means).
func Observe(ctx context.Context, c client.Client, pkg, ns string) (*Observed, error) {
	o := &Observed{Package: pkg, Namespace: ns}
	var ogs operatorsv1.OperatorGroupList
	if err := c.List(ctx, &ogs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing OperatorGroups in %s: %w", ns, err)
	}
	o.OperatorGroups = ogs.Items
	sub, err := findSubscription(ctx, c, pkg, ns)
	if err != nil || sub == nil {
		return o, err
	}
	o.Subscription = sub

	cs := &v1alpha1.CatalogSource{}
	key := client.ObjectKey{Namespace: cmp.Or(sub.Spec.CatalogSourceNamespace, ns), Name: sub.Spec.CatalogSource}
	if err := getOptional(ctx, c, key, cs); err != nil {
		return nil, err
	} else if cs.Name != "" {
		o.CatalogSource = cs
		if cs.Spec.Image != "" {
			if o.CatalogPods, err = listPods(ctx, c, cs.Namespace, labels.SelectorFromSet(labels.Set{catalogSourceLabel: cs.Name})); err != nil {
				return nil, err
			}
		}
	}
	if ref := sub.Status.InstallPlanRef; ref != nil {
		ip := &v1alpha1.InstallPlan{}
		if err := getOptional(ctx, c, client.ObjectKey{Namespace: cmp.Or(ref.Namespace, ns), Name: ref.Name}, ip); err != nil {
			return nil, err
		} else if ip.Name != "" {
			o.InstallPlan = ip
		}
	}
	if name := cmp.Or(sub.Status.CurrentCSV, sub.Status.InstalledCSV); name != "" {
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := getOptional(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
			return nil, err
		} else if csv.Name != "" {
			o.CSV = csv
			if o.OperatorPods, err = operatorPods(ctx, c, csv); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

// catalogSourceLabel marks the pods OLM runs for a CatalogSource.
const catalogSourceLabel = "olm.catalogSource"

func listPods(ctx context.Context, c client.Client, ns string, sel labels.Selector) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	return pods.Items, nil
}

// operatorPods are the pods of the CSV's Deployments.
func operatorPods(ctx context.Context, c client.Client, csv *v1alpha1.ClusterServiceVersion) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		pods, err := listPods(ctx, c, csv.Namespace, sel)
		if err != nil {
			return nil, err
		}
		out = append(out, pods...)
	}
	return out, nil
}

// podProblems says what keeps pods from running and ready, or "".
func podProblems(pods []corev1.Pod) string {
	var out []string
	for i := range pods {
		for _, p := range podhealth.Describe(&pods[i]) {
			out = append(out, "pod "+pods[i].Name+": "+p.Message)
		}
	}
	return strings.Join(out, "; ")
}

// findSubscription returns the Subscription of pkg in ns, nil if none.
func findSubscription(ctx context.Context, c client.Client, pkg, ns string) (*v1alpha1.Subscription, error) {
	var subs v1alpha1.SubscriptionList
	if err := c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Subscriptions in %s: %w", ns, err)
	}
	for i := range subs.Items {
		if s := &subs.Items[i]; s.Spec != nil && s.Spec.Package == pkg {
			return s, nil
		}
	}
	return nil, nil
}

// getOptional gets key into obj, leaving obj empty when it does not exist.
func getOptional(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object) error {
	if err := c.Get(ctx, key, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return nil
}

// Severity of a Finding.
type Severity string

const (
	Pass Severity = "pass"
	Warn Severity = "warn"
	Fail Severity = "fail"
)

// Finding is one step of the chain and how it stands.
type Finding struct {
	// Check names the step, e.g. "CatalogSource connection".
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Object is kind/name of the object concerned, if any.
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
	// Fix is a one-line remedy for a warning or failure.
	Fix string `json:"fix,omitempty"`
}

// Check names of the findings Diagnose returns.
const (
	CheckOperatorGroup = "OperatorGroup"
	CheckCatalogSource = "CatalogSource connection"
	CheckSubscription  = "Subscription"
	// CheckOperatorPods looks at the pods of the CSV's Deployments.
	CheckOperatorPods = "Operator pods"
	CheckInstallPlan  = "InstallPlan"
	CheckCSV          = "ClusterServiceVersion"
)

// Installed reports whether the package's CSV reached Succeeded.
func (o *Observed) Installed() bool {
	return o.CSV != nil && o.CSV.Status.Phase == v1alpha1.CSVPhaseSucceeded
}

// Diagnose checks each step of the chain, in the order OLM walks it, and says
// where and why an install is stuck. It reads only o.
func Diagnose(o *Observed) []Finding {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	subscribeFix := fmt.Sprintf("chartpilot olm subscribe %s -n %s --catalog-address HOST:PORT", o.Package, o.Namespace)

	switch len(o.OperatorGroups) {
	case 0:
		add(Finding{Check: CheckOperatorGroup, Severity: Fail, Message: "namespace " + o.Namespace + " has no OperatorGroup: OLM installs no CSV there (NoOperatorGroup)", Fix: subscribeFix + " (creates one)"})
	case 1:
		og := o.OperatorGroups[0]
		add(Finding{Check: CheckOperatorGroup, Severity: Pass, Object: "operatorgroup/" + og.Name, Message: "targets " + describeTargets(ogTargets(&og))})
	default:
		var names []string
		for _, og := range o.OperatorGroups {
			names = append(names, og.Name)
		}
		slices.Sort(names)
		add(Finding{Check: CheckOperatorGroup, Severity: Fail, Message: fmt.Sprintf("namespace %s has %d OperatorGroups (%s): OLM installs nothing there (TooManyOperatorGroups)", o.Namespace, len(names), strings.Join(names, ", ")),
			Fix: "kubectl -n " + o.Namespace + " delete operatorgroup NAME, keeping one"})
	}

	sub := o.Subscription
	if sub == nil {
		add(Finding{Check: CheckSubscription, Severity: Fail, Message: fmt.Sprintf("no Subscription for package %s in namespace %s", o.Package, o.Namespace), Fix: subscribeFix})
		return out
	}
	add(diagnoseCatalogSource(o))
	subObj := "subscription/" + sub.Name
	subFinding := diagnoseSubscription(sub)
	subFinding.Object = subObj
	add(subFinding)

	switch ip := o.InstallPlan; {
	case ip == nil && sub.Status.InstallPlanRef != nil:
		add(Finding{Check: CheckInstallPlan, Severity: Fail, Object: "installplan/" + sub.Status.InstallPlanRef.Name, Message: "the Subscription's InstallPlan is gone", Fix: "delete and re-create the Subscription"})
	case ip == nil:
		// Nothing to add when the Subscription says why there is none.
		if subFinding.Severity != Warn {
			break
		}
		add(Finding{Check: CheckInstallPlan, Severity: Warn, Message: "no InstallPlan yet: OLM has not resolved the Subscription"})
	default:
		add(diagnoseInstallPlan(ip))
	}

	name := cmp.Or(sub.Status.CurrentCSV, sub.Status.InstalledCSV)
	switch {
	case o.CSV != nil:
		add(diagnoseCSV(o.CSV))
		if problems := podProblems(o.OperatorPods); problems != "" {
			add(Finding{Check: CheckOperatorPods, Severity: Fail, Object: "clusterserviceversion/" + o.CSV.Name, Message: problems,
				Fix: fmt.Sprintf("kubectl -n %s describe pods; kubectl -n %s logs POD", o.Namespace, o.Namespace)})
		}
	case name != "":
		add(Finding{Check: CheckCSV, Severity: Warn, Object: "clusterserviceversion/" + name, Message: "not created yet: the InstallPlan has not run"})
	case subFinding.Severity != Fail:
		add(Finding{Check: CheckCSV, Severity: Warn, Message: "the Subscription names no CSV yet"})
	}
	return out
}

func diagnoseCatalogSource(o *Observed) Finding {
	sub := o.Subscription
	f := Finding{Check: CheckCatalogSource, Object: "catalogsource/" + sub.Spec.CatalogSource}
	cs := o.CatalogSource
	if cs == nil {
		f.Severity = Fail
		f.Message = fmt.Sprintf("the Subscription's CatalogSource %s/%s does not exist", cmp.Or(sub.Spec.CatalogSourceNamespace, o.Namespace), sub.Spec.CatalogSource)
		f.Fix = fmt.Sprintf("chartpilot olm subscribe %s -n %s --catalog-address HOST:PORT (creates it)", o.Package, o.Namespace)
		return f
	}
	where := cmp.Or(cs.Spec.Address, cs.Spec.Image)
	state := ""
	if cs.Status.GRPCConnectionState != nil {
		state = cs.Status.GRPCConnectionState.LastObservedState
	}
	switch state {
	case "READY":
		f.Severity, f.Message = Pass, "READY ("+where+")"
		diagnoseCatalogContent(o, &f)
	case "":
		f.Severity = Warn
		f.Message = "no connection state yet (" + where + ")"
		if cs.Status.Message != "" {
			f.Message += ": " + cs.Status.Message
		}
		f.Fix = "wait a few seconds; if it stays, check that OLM's catalog operator runs"
	default:
		f.Severity = Fail
		f.Message = fmt.Sprintf("%s: OLM cannot reach the registry at %s", state, where)
		if cs.Status.Message != "" {
			f.Message += " (" + cs.Status.Message + ")"
		}
		if cs.Spec.Address != "" {
			f.Fix = "start the registry server: chartpilot catalog serve DIR --address " + cs.Spec.Address
		} else {
			f.Fix = fmt.Sprintf("check the registry pod: kubectl -n %s logs -l %s=%s", cs.Namespace, catalogSourceLabel, cs.Name)
		}
	}
	if problems := podProblems(o.CatalogPods); problems != "" && f.Severity != Pass {
		f.Message += "; " + problems
	}
	return f
}

// diagnoseCatalogContent turns the pass of a READY CatalogSource into a
// failure when its registry serves no packages, or not the package: OLM
// reaches it, and only the Subscription's ResolutionFailed says so.
func diagnoseCatalogContent(o *Observed, f *Finding) {
	cs := o.CatalogSource
	where := cmp.Or(cs.Spec.Image, cs.Spec.Address)
	if cs.Spec.Image != "" {
		where = "image " + where
	}
	fix := "add the package's bundles to the catalog (chartpilot catalog add), then rebuild and push its image (make catalog-build catalog-push)"
	if cs.Spec.Address != "" {
		fix = "add the package's bundles to the catalog (chartpilot catalog add) and serve it again: chartpilot catalog serve DIR --address " + cs.Spec.Address
	}
	switch cat := o.Catalog; {
	case cat == nil:
		if o.CatalogError != "" {
			f.Message += "; its packages could not be listed: " + o.CatalogError
		}
	case len(cat.Packages) == 0:
		f.Severity, f.Fix = Fail, fix
		f.Message = fmt.Sprintf("READY, but the catalog of CatalogSource %s/%s (%s) serves no packages", cs.Namespace, cs.Name, where)
	case !slices.Contains(cat.Packages, o.Package):
		f.Severity, f.Fix = Fail, fix
		f.Message = fmt.Sprintf("READY, but the catalog of CatalogSource %s/%s (%s) serves no package %s (it serves %s)", cs.Namespace, cs.Name, where, o.Package, strings.Join(cat.Packages, ", "))
	default:
		f.Message += fmt.Sprintf(", serves package %s", o.Package)
	}
}

// failingConditions are the Subscription conditions that mean it is stuck,
// when True, with their remedy.
var failingConditions = []struct {
	Type v1alpha1.SubscriptionConditionType
	Fix  string
}{
	{v1alpha1.SubscriptionResolutionFailed, "check the package, channel and startingCSV against the catalog: chartpilot catalog render"},
	{v1alpha1.SubscriptionBundleUnpackFailed, "publish the bundle inline (chartpilot catalog add without --image) or make its image pullable"},
	{v1alpha1.SubscriptionInstallPlanFailed, "see the InstallPlan's message; fix it, then delete the InstallPlan and the Subscription and subscribe again"},
	{v1alpha1.SubscriptionCatalogSourcesUnhealthy, "make the CatalogSource READY (see the CatalogSource check)"},
}

func diagnoseSubscription(sub *v1alpha1.Subscription) Finding {
	f := Finding{Check: CheckSubscription}
	for _, fc := range failingConditions {
		c := sub.Status.GetCondition(fc.Type)
		if c.Status != "True" {
			continue
		}
		f.Severity = Fail
		f.Message = fmt.Sprintf("%s: %s", fc.Type, cmp.Or(c.Message, c.Reason))
		f.Fix = fc.Fix
		return f
	}
	state := string(sub.Status.State)
	switch state {
	case v1alpha1.SubscriptionStateAtLatest:
		f.Severity, f.Message = Pass, fmt.Sprintf("AtLatestKnown, installed %s", sub.Status.InstalledCSV)
	case v1alpha1.SubscriptionStateUpgradePending:
		f.Severity, f.Message = Warn, fmt.Sprintf("UpgradePending: installing %s", sub.Status.CurrentCSV)
	case v1alpha1.SubscriptionStateUpgradeAvailable:
		f.Severity, f.Message = Warn, fmt.Sprintf("UpgradeAvailable: %s is ready to install", sub.Status.CurrentCSV)
	case v1alpha1.SubscriptionStateFailed:
		f.Severity, f.Message = Fail, "UpgradeFailed: "+string(sub.Status.Reason)
		f.Fix = "see the InstallPlan and CSV checks"
	default:
		f.Severity, f.Message = Warn, "not processed by OLM yet (no state)"
		f.Fix = "wait a few seconds; if it stays, check that OLM's catalog operator runs"
	}
	if c := sub.Status.GetCondition(v1alpha1.SubscriptionDeprecated); c.Status == "True" && f.Severity == Pass {
		f.Severity, f.Message = Warn, "Deprecated: "+c.Message
		f.Fix = "follow the deprecation message: switch channel or upgrade"
	}
	return f
}

func diagnoseInstallPlan(ip *v1alpha1.InstallPlan) Finding {
	f := Finding{Check: CheckInstallPlan, Object: "installplan/" + ip.Name}
	switch ip.Status.Phase {
	case v1alpha1.InstallPlanPhaseComplete:
		f.Severity, f.Message = Pass, "Complete ("+strings.Join(ip.Spec.ClusterServiceVersionNames, ", ")+")"
	case v1alpha1.InstallPlanPhaseRequiresApproval:
		f.Severity = Warn
		f.Message = "RequiresApproval: the Subscription's approval is Manual"
		f.Fix = fmt.Sprintf(`kubectl -n %s patch installplan %s --type merge -p '{"spec":{"approved":true}}'`, ip.Namespace, ip.Name)
	case v1alpha1.InstallPlanPhaseFailed:
		f.Severity = Fail
		msg := ip.Status.Message
		for _, c := range ip.Status.Conditions {
			if c.Status == "False" && c.Message != "" {
				msg = cmp.Or(msg, string(c.Reason)+": "+c.Message)
			}
		}
		f.Message = "Failed: " + cmp.Or(msg, "no message")
		f.Fix = "fix the cause, then delete the InstallPlan and the Subscription and subscribe again"
	default:
		f.Severity = Warn
		f.Message = cmp.Or(string(ip.Status.Phase), "no phase yet") + ": in progress"
	}
	return f
}

func diagnoseCSV(csv *v1alpha1.ClusterServiceVersion) Finding {
	f := Finding{Check: CheckCSV, Object: "clusterserviceversion/" + csv.Name}
	st := csv.Status
	reason := string(st.Reason)
	switch {
	case st.Phase == v1alpha1.CSVPhaseSucceeded:
		f.Severity, f.Message = Pass, "Succeeded"
		return f
	case st.Reason == v1alpha1.CSVReasonRequirementsNotMet:
		f.Severity = Fail
		var missing []string
		for _, r := range st.RequirementStatus {
			if r.Status == v1alpha1.RequirementStatusReasonPresent {
				continue
			}
			m := fmt.Sprintf("%s %s %s", r.Kind, r.Name, r.Status)
			if r.Message != "" {
				m += " (" + r.Message + ")"
			}
			for _, d := range r.Dependents {
				if d.Status != v1alpha1.DependentStatusReasonSatisfied {
					m += "; " + d.Kind + " " + d.Message
				}
			}
			missing = append(missing, m)
		}
		f.Message = fmt.Sprintf("%s, RequirementsNotMet: %s", st.Phase, cmp.Or(strings.Join(missing, "; "), st.Message))
		f.Fix = "provide the missing requirement (a CRD from another operator, or a permission the CSV lists)"
	case st.Phase == v1alpha1.CSVPhaseFailed:
		f.Severity = Fail
		f.Message = fmt.Sprintf("Failed, %s: %s", reason, st.Message)
		f.Fix = csvFix(st.Reason)
	default:
		f.Severity = Warn
		f.Message = cmp.Or(string(st.Phase), "no phase yet")
		if reason != "" {
			f.Message += ", " + reason
		}
		if st.Message != "" {
			f.Message += ": " + st.Message
		}
		f.Fix = csvFix(st.Reason)
	}
	return f
}

func csvFix(r v1alpha1.ConditionReason) string {
	switch r {
	case v1alpha1.CSVReasonNoOperatorGroup, v1alpha1.CSVReasonTooManyOperatorGroups:
		return "keep exactly one OperatorGroup in the namespace"
	case v1alpha1.CSVReasonUnsupportedOperatorGroup, v1alpha1.CSVReasonInvalidInstallModes:
		return "make the OperatorGroup's target namespaces fit an install mode the CSV supports"
	case v1alpha1.CSVReasonComponentUnhealthy, v1alpha1.CSVReasonComponentFailed, v1alpha1.CSVReasonComponentFailedNoRetry:
		return "check the operator Deployment and its pods: chartpilot doctor --package PACKAGE"
	case v1alpha1.CSVReasonOwnerConflict, v1alpha1.CSVReasonInterOperatorGroupOwnerConflict:
		return "another operator owns the same APIs: uninstall one of them"
	}
	return ""
}
