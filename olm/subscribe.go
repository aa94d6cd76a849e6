package olm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/apply"
)

// ErrTooManyOperatorGroups means a namespace has more than one
// OperatorGroup: OLM installs nothing there (CSV reason TooManyOperatorGroups).
var ErrTooManyOperatorGroups = errors.New("more than one OperatorGroup in the namespace")

// ErrIncompatibleOperatorGroup means the namespace's OperatorGroup targets
// other namespaces than the install mode needs.
var ErrIncompatibleOperatorGroup = errors.New("the namespace's OperatorGroup does not fit the install mode")

// ErrUnsupportedInstallMode means the CSV does not support the install mode.
var ErrUnsupportedInstallMode = errors.New("install mode not supported by the operator")

// CatalogPollInterval is how often OLM looks for a new digest of a catalog image.
const CatalogPollInterval = 10 * time.Minute

// SubscribeOptions describe an operator to install from a catalog.
type SubscribeOptions struct {
	// Package is the catalog package to install. Required.
	Package string
	// Namespace is where the operator is installed: the CatalogSource,
	// OperatorGroup and Subscription go there. Required.
	Namespace string
	// CatalogAddress is host:port of a registry server (chartpilot catalog
	// serve) for a CatalogSource with spec.address. Exactly one of
	// CatalogAddress and CatalogImage is required.
	CatalogAddress string
	// CatalogImage is a catalog image for a CatalogSource that OLM runs a
	// registry pod for.
	CatalogImage string
	// CatalogSourceName is the CatalogSource's name; default "<package>-catalog".
	CatalogSourceName string
	// SubscriptionName is the Subscription's name; default: the name of the
	// namespace's Subscription to the package if there is one, else the package.
	SubscriptionName string
	// OperatorGroupName is the name of the OperatorGroup created when the
	// namespace has none; default the package.
	OperatorGroupName string
	// Channel to follow; empty means the package's default channel.
	Channel string
	// Approval of InstallPlans: Automatic (default) or Manual.
	Approval v1alpha1.Approval
	// StartingCSV installs this CSV first instead of the channel head.
	StartingCSV string
	// InstallMode is OwnNamespace, SingleNamespace or AllNamespaces. Empty
	// means: the mode the namespace's OperatorGroup gives, else the first
	// of OwnNamespace, AllNamespaces that the CSV supports (as the catalog
	// says, when it can be reached), else OwnNamespace.
	InstallMode v1alpha1.InstallModeType
	// TargetNamespace is the namespace watched in SingleNamespace mode.
	TargetNamespace string
	// SupportedModes are the CSV's install modes, when the caller knows
	// them (see LookupBundle); nil means unknown.
	SupportedModes v1alpha1.InstallModeSet
}

func (o SubscribeOptions) withDefaults() (SubscribeOptions, error) {
	if o.Package == "" {
		return o, errors.New("subscribe: no package")
	}
	if o.Namespace == "" {
		return o, errors.New("subscribe: no namespace")
	}
	if (o.CatalogAddress == "") == (o.CatalogImage == "") {
		return o, errors.New("subscribe: set either a catalog address or a catalog image")
	}
	if o.CatalogSourceName == "" {
		o.CatalogSourceName = CatalogSourceName(o.Package)
	}
	if o.SubscriptionName == "" {
		o.SubscriptionName = o.Package
	}
	if o.OperatorGroupName == "" {
		o.OperatorGroupName = o.Package
	}
	if o.Approval == "" {
		o.Approval = v1alpha1.ApprovalAutomatic
	}
	if o.Approval != v1alpha1.ApprovalAutomatic && o.Approval != v1alpha1.ApprovalManual {
		return o, fmt.Errorf("subscribe: approval %q: want Automatic or Manual", o.Approval)
	}
	for _, n := range []struct{ field, name string }{
		{"package", o.Package}, {"catalog source name", o.CatalogSourceName}, {"subscription name", o.SubscriptionName}, {"operator group name", o.OperatorGroupName},
	} {
		if errs := validation.IsDNS1123Subdomain(n.name); len(errs) > 0 {
			return o, fmt.Errorf("subscribe: %s %q: %s", n.field, n.name, strings.Join(errs, "; "))
		}
	}
	switch o.InstallMode {
	case "", v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeAllNamespaces:
		if o.TargetNamespace != "" {
			return o, errors.New("subscribe: a target namespace is for the SingleNamespace install mode")
		}
	case v1alpha1.InstallModeTypeSingleNamespace:
		if o.TargetNamespace == "" {
			return o, errors.New("subscribe: the SingleNamespace install mode needs a target namespace")
		}
		if o.TargetNamespace == o.Namespace {
			// OLM calls watching only the install namespace OwnNamespace.
			o.InstallMode = v1alpha1.InstallModeTypeOwnNamespace
			o.TargetNamespace = ""
		}
	default:
		return o, fmt.Errorf("subscribe: install mode %q: want OwnNamespace, SingleNamespace or AllNamespaces", o.InstallMode)
	}
	return o, nil
}

// Plan is what Subscribe applies.
type Plan struct {
	CatalogSource *v1alpha1.CatalogSource
	// OperatorGroup is the namespace's OperatorGroup: an existing one when
	// ReuseOperatorGroup is true, else one to create.
	OperatorGroup      *operatorsv1.OperatorGroup
	ReuseOperatorGroup bool
	Subscription       *v1alpha1.Subscription
	// InstallMode is the install mode chosen and InstallModeReason why.
	InstallMode       v1alpha1.InstallModeType
	InstallModeReason string
}

// NewPlan builds the objects for opts, given the OperatorGroups already in
// the namespace (none for a dry run without a cluster). It refuses a
// namespace with two OperatorGroups or one that does not fit the install mode.
func NewPlan(opts SubscribeOptions, existing []operatorsv1.OperatorGroup) (*Plan, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(existing) > 1 {
		names := make([]string, 0, len(existing))
		for _, og := range existing {
			names = append(names, og.Name)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: namespace %s has OperatorGroups %s; OLM installs nothing there until one is left: delete the others",
			ErrTooManyOperatorGroups, opts.Namespace, strings.Join(names, ", "))
	}
	p := &Plan{}
	if p.InstallMode, p.InstallModeReason, err = chooseInstallMode(opts, existing); err != nil {
		return nil, err
	}
	targets := targetNamespaces(p.InstallMode, opts.Namespace, opts.TargetNamespace)
	if len(existing) == 1 {
		og := existing[0]
		// A mode taken from the OperatorGroup fits it by definition (even
		// MultiNamespace, which subscribe cannot create).
		if got := ogTargets(&og); opts.InstallMode != "" && !slices.Equal(got, targets) {
			return nil, fmt.Errorf("%w: OperatorGroup %s in namespace %s targets %s, install mode %s needs %s; choose --install-mode %s or install into another namespace",
				ErrIncompatibleOperatorGroup, og.Name, opts.Namespace, describeTargets(got), p.InstallMode, describeTargets(targets), modeOfTargets(got, opts.Namespace))
		}
		p.OperatorGroup, p.ReuseOperatorGroup = og.DeepCopy(), true
	} else {
		p.OperatorGroup = &operatorsv1.OperatorGroup{
			TypeMeta:   metav1.TypeMeta{APIVersion: operatorsv1.GroupVersion.String(), Kind: "OperatorGroup"},
			ObjectMeta: objectMeta(opts.OperatorGroupName, opts),
			Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: targets},
		}
	}

	cs := &v1alpha1.CatalogSource{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.CatalogSourceCRDAPIVersion, Kind: v1alpha1.CatalogSourceKind},
		ObjectMeta: objectMeta(opts.CatalogSourceName, opts),
		Spec: v1alpha1.CatalogSourceSpec{
			SourceType:  v1alpha1.SourceTypeGrpc,
			Address:     opts.CatalogAddress,
			Image:       opts.CatalogImage,
			DisplayName: opts.Package + " catalog",
			Publisher:   "chartpilot",
		},
	}
	if opts.CatalogImage != "" {
		// A catalog image is polled for new digests, so that publishing a
		// new catalog under the same tag upgrades Subscriptions.
		cs.Spec.UpdateStrategy = &v1alpha1.UpdateStrategy{RegistryPoll: &v1alpha1.RegistryPoll{RawInterval: CatalogPollInterval.String()}}
	}
	p.CatalogSource = cs
	p.Subscription = &v1alpha1.Subscription{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SubscriptionCRDAPIVersion, Kind: v1alpha1.SubscriptionKind},
		ObjectMeta: objectMeta(opts.SubscriptionName, opts),
		Spec: &v1alpha1.SubscriptionSpec{
			CatalogSource:          opts.CatalogSourceName,
			CatalogSourceNamespace: opts.Namespace,
			Package:                opts.Package,
			Channel:                opts.Channel,
			StartingCSV:            opts.StartingCSV,
			InstallPlanApproval:    opts.Approval,
		},
	}
	return p, nil
}

func objectMeta(name string, opts SubscribeOptions) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: opts.Namespace,
		Labels: map[string]string{ManagedByLabel: apply.FieldManager, PackageLabel: opts.Package},
	}
}

// chooseInstallMode applies the rules of SubscribeOptions.InstallMode.
func chooseInstallMode(opts SubscribeOptions, existing []operatorsv1.OperatorGroup) (v1alpha1.InstallModeType, string, error) {
	supported := opts.SupportedModes
	check := func(mode v1alpha1.InstallModeType, why string) (v1alpha1.InstallModeType, string, error) {
		if supported != nil && !supported[mode] {
			return "", "", fmt.Errorf("%w: the CSV of %s supports %s, not %s", ErrUnsupportedInstallMode, opts.Package, describeModes(supported), mode)
		}
		return mode, why, nil
	}
	if opts.InstallMode != "" {
		return check(opts.InstallMode, "asked for")
	}
	if len(existing) == 1 {
		return check(modeOfTargets(ogTargets(&existing[0]), opts.Namespace), "the mode of OperatorGroup "+existing[0].Name)
	}
	if supported == nil {
		return v1alpha1.InstallModeTypeOwnNamespace, "default: the CSV's install modes are unknown", nil
	}
	for _, m := range []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeAllNamespaces} {
		if supported[m] {
			return m, "supported by the CSV (" + describeModes(supported) + ")", nil
		}
	}
	return "", "", fmt.Errorf("%w: the CSV of %s supports only %s: choose --install-mode SingleNamespace with a target namespace",
		ErrUnsupportedInstallMode, opts.Package, describeModes(supported))
}

func describeModes(s v1alpha1.InstallModeSet) string {
	var out []string
	for _, m := range []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace, v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces} {
		if s[m] {
			out = append(out, string(m))
		}
	}
	if len(out) == 0 {
		return "no install mode"
	}
	return strings.Join(out, ", ")
}

// targetNamespaces are an OperatorGroup's spec.targetNamespaces for a mode;
// nil means all namespaces.
func targetNamespaces(mode v1alpha1.InstallModeType, ns, target string) []string {
	switch mode {
	case v1alpha1.InstallModeTypeOwnNamespace:
		return []string{ns}
	case v1alpha1.InstallModeTypeSingleNamespace:
		return []string{target}
	}
	return nil
}

// ogTargets are the namespaces an OperatorGroup's spec selects, sorted;
// nil for all namespaces. A label selector counts as its status namespaces.
func ogTargets(og *operatorsv1.OperatorGroup) []string {
	t := slices.Clone(og.Spec.TargetNamespaces)
	if len(t) == 0 && og.Spec.Selector != nil {
		t = slices.Clone(og.Status.Namespaces)
	}
	slices.Sort(t)
	if len(t) == 0 || (len(t) == 1 && t[0] == corev1.NamespaceAll) {
		return nil
	}
	return t
}

func modeOfTargets(targets []string, ns string) v1alpha1.InstallModeType {
	switch {
	case len(targets) == 0:
		return v1alpha1.InstallModeTypeAllNamespaces
	case len(targets) == 1 && targets[0] == ns:
		return v1alpha1.InstallModeTypeOwnNamespace
	case len(targets) == 1:
		return v1alpha1.InstallModeTypeSingleNamespace
	}
	return v1alpha1.InstallModeTypeMultiNamespace
}

func describeTargets(t []string) string {
	if len(t) == 0 {
		return "all namespaces"
	}
	return "[" + strings.Join(t, ", ") + "]"
}

// Objects are the plan's objects to apply, as the API server takes them: no
// status, no empty fields. A reused OperatorGroup is left out.
func (p *Plan) Objects() ([]*unstructured.Unstructured, error) {
	objs := []runtime.Object{p.CatalogSource}
	if !p.ReuseOperatorGroup {
		objs = append(objs, p.OperatorGroup)
	}
	objs = append(objs, p.Subscription)
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := Manifest(o)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// Action is what happened to one object.
type Action string

const (
	ActionCreated           = Action(apply.Created)
	ActionConfigured        = Action(apply.Configured)
	ActionUnchanged         = Action(apply.Unchanged)
	ActionReused     Action = "reused"
	ActionDeleted    Action = "deleted"
)

// ObjectResult names an object and what was done to it.
type ObjectResult struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Action    Action `json:"action"`
}

func (r ObjectResult) String() string {
	return strings.ToLower(r.Kind) + "/" + r.Name + " " + string(r.Action)
}

// SubscribeResult reports what Subscribe did.
type SubscribeResult struct {
	Objects           []ObjectResult           `json:"objects"`
	InstallMode       v1alpha1.InstallModeType `json:"installMode"`
	InstallModeReason string                   `json:"installModeReason"`
}

// Subscribe applies the CatalogSource, the OperatorGroup (unless the
// namespace has a fitting one) and the Subscription with server-side apply:
// running it again changes nothing.
func Subscribe(ctx context.Context, c client.Client, opts SubscribeOptions) (*SubscribeResult, error) {
	if opts.Namespace != "" {
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: opts.Namespace}, &ns); err != nil {
			return nil, fmt.Errorf("subscribe: namespace %s: %w", opts.Namespace, err)
		}
	}
	var ogs operatorsv1.OperatorGroupList
	if opts.Namespace != "" {
		if err := c.List(ctx, &ogs, client.InNamespace(opts.Namespace)); err != nil {
			return nil, fmt.Errorf("subscribe: listing OperatorGroups: %w", err)
		}
	}
	if opts.SubscriptionName == "" && opts.Namespace != "" && opts.Package != "" {
		// A Subscription made with kubectl under another name is updated,
		// not doubled: two Subscriptions to one package conflict in OLM.
		existing, err := findSubscription(ctx, c, opts.Package, opts.Namespace)
		if err != nil {
			return nil, fmt.Errorf("subscribe: %w", err)
		}
		if existing != nil {
			opts.SubscriptionName = existing.Name
		}
	}
	plan, err := NewPlan(opts, ogs.Items)
	if err != nil {
		return nil, err
	}
	objs, err := plan.Objects()
	if err != nil {
		return nil, err
	}
	res := &SubscribeResult{InstallMode: plan.InstallMode, InstallModeReason: plan.InstallModeReason}
	for _, u := range objs {
		if u.GetKind() == "Subscription" {
			if plan.ReuseOperatorGroup {
				res.Objects = append(res.Objects, ObjectResult{Kind: "OperatorGroup", Name: plan.OperatorGroup.Name, Namespace: plan.OperatorGroup.Namespace, Action: ActionReused})
			}
		}
		done, err := Apply(ctx, c, u)
		if err != nil {
			return res, err
		}
		res.Objects = append(res.Objects, done)
	}
	return res, nil
}

// Apply server-side applies u as apply.FieldManager and says what that did.
func Apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) (ObjectResult, error) {
	outcome, err := apply.Object(ctx, c, u, apply.FieldManager)
	return ObjectResult{Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace(), Action: Action(outcome)}, err
}

// CatalogSourceName is the name Subscribe gives the CatalogSource it makes
// for a package.
func CatalogSourceName(pkg string) string { return pkg + "-catalog" }
