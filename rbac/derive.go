package rbac

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/metricsauth"
	"github.com/chartpilot/chartpilot/operator/storageversion"

	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
)

// ErrRemovedAPI is wrapped by Result.Err (and CheckCRDs' error) when the
// chart renders, or ships under crds/, an apiVersion the target Kubernetes
// version no longer serves.
var ErrRemovedAPI = errors.New("removed Kubernetes API")

// Owner is the operator's own custom resource.
type Owner struct {
	// Group is the API group, e.g. "charts.example.com".
	Group string
	// Resource is the plural resource name, e.g. "webapps".
	Resource string
	// Kind is the kind, e.g. "WebApp"; needed with Options.Backup.
	Kind string
}

// Options say what to derive RBAC for.
type Options struct {
	// Chart is the chart the operator manages. Required.
	Chart *chart.Chart
	// Owner is the operator's custom resource. Required.
	Owner Owner
	// Values are the user's values (init's --values and --set), merged
	// over the chart's defaults in every render.
	Values map[string]any
	// SampleValues are the values (the spec) of each sample CR; the chart is
	// rendered with each besides its defaults.
	SampleValues []map[string]any
	// WatchNamespace, when set, is the one namespace the operator watches:
	// namespaced rules go to a Role there, cluster-scoped ones to the
	// ClusterRole. Empty means all namespaces: everything in the ClusterRole.
	WatchNamespace string
	// Name is the name of the Role and the ClusterRole (default "manager-role").
	Name string
	// KubeVersion is the Kubernetes version the chart is rendered for
	// (.Capabilities.KubeVersion, and its API set as .Capabilities.
	// APIVersions) and its APIs are checked against (default
	// DefaultKubeVersion).
	KubeVersion string
	// Config, when set, resolves kinds through this cluster's discovery
	// before the built-in table, and its served APIs are
	// .Capabilities.APIVersions.
	Config *rest.Config
	// Backup grants what the backups and restores of the owner need (see
	// operator/backup): their kinds, mover pods, hooks through pods/exec,
	// claims, Secrets and ConfigMaps restored, the owner created.
	Backup bool
	// BackupHooks grants pods/exec for backup hooks (HooksExtra) although
	// the chart shows none: the custom resources add Velero's hook
	// annotations through values the chart passes on to its pods
	// (podAnnotations). Without it pods/exec is granted only when the
	// chart's renders, templates or values carry a hook annotation.
	BackupHooks bool
	// MigrateStorage names the CRDs (plural.group) whose CRs the operator
	// migrates to their storage version at start-up (package
	// operator/storageversion): it may read each and update its status, by
	// name. Set it for a CRD that serves more than one version. The CRs'
	// own rules (list, update) already cover the migration in the
	// namespaces the operator watches, where it runs.
	MigrateStorage []string
}

func (o Options) withDefaults() (Options, error) {
	if o.Chart == nil {
		return o, errors.New("deriving RBAC: no chart")
	}
	if o.Backup && o.Owner.Kind == "" {
		return o, errors.New("deriving RBAC: backup rules need the owner's kind")
	}
	if o.Owner.Group == "" || o.Owner.Resource == "" {
		return o, errors.New("deriving RBAC: the owner custom resource needs a group and a resource")
	}
	if o.Name == "" {
		o.Name = "manager-role"
	}
	if o.KubeVersion == "" {
		o.KubeVersion = DefaultKubeVersion
	}
	return o, nil
}

// Kind is one kind the chart creates.
type Kind struct {
	schema.GroupVersionKind
	// Resource and Namespaced are the kind's resource name and scope.
	Resource   string
	Namespaced bool
	// ResolvedBy says where Resource and Namespaced come from.
	ResolvedBy Source
	// Templates are the templates that create it.
	Templates []string
	// Gates are the values that must be set for the chart to create it,
	// as the derivation set them ("autoscaling.enabled", "replicaCount=2",
	// "kind=StatefulSet"; a leading "!" means unset or false), and the APIs
	// the cluster must serve ("the cluster serves monitoring.coreos.com/v1");
	// empty when the default values or a sample's create it.
	Gates []string
	// ScannedOnly is true for a kind found in a template's text that no
	// render produced.
	ScannedOnly bool
}

// Problem is a finding about the chart, tied to the template it is in.
type Problem struct {
	// Template is the chart file, e.g. "legacy/templates/cronjob.yaml".
	Template string
	// GVK is the kind concerned, if any.
	GVK schema.GroupVersionKind
	// Message says what is wrong and what to do.
	Message string
}

func (p Problem) String() string {
	if p.Template == "" {
		return p.Message
	}
	return p.Template + ": " + p.Message
}

// Rule is a policy rule with the reasons it is granted.
type Rule struct {
	rbacv1.PolicyRule
	// Namespaced rules go to the Role when there is one.
	Namespaced bool
	// Reasons are comments for role.yaml: what needs the rule.
	Reasons []string
}

// Result is the RBAC derived for a chart.
type Result struct {
	// Kinds are the kinds the chart creates, sorted by group, kind, version.
	Kinds []Kind
	// Rules are every rule, in the order of role.yaml.
	Rules []Rule
	// ClusterRole holds the cluster-scoped rules, and the namespaced ones
	// when the operator watches all namespaces.
	ClusterRole *rbacv1.ClusterRole
	// Role holds the namespaced rules when the operator watches one
	// namespace; nil otherwise.
	Role *rbacv1.Role
	// Errors are removed APIs that the default values (or a sample's)
	// render, and those in crds/; Warnings deprecated APIs, removed ones
	// only gates render, guessed resource names, kinds found only by
	// scanning templates, what chartpilot could not render or read, and
	// rules that make the operator cluster-admin in effect.
	Errors, Warnings []Problem
	// Renders are every render of the chart the derivation looked at: the
	// default values, each sample's, the gates explored and each choice
	// of a value that picks a kind. What they hold is what the operator may
	// run (its images, for one). Renders share objects that rendered the
	// same: read them, do not modify them.
	Renders []*chart.Rendered
	opts    Options
}

// Err is nil unless the chart renders removed APIs, in which case it wraps
// ErrRemovedAPI and names each one.
func (r *Result) Err() error {
	return removedAPIError(r.Errors, r.opts.KubeVersion)
}

// created is one kind seen in renders or templates, before resolution.
type created struct {
	gvk       schema.GroupVersionKind
	templates map[string]bool
	gates     map[string]bool
	// ungated is true once default or sample values render it.
	ungated, rendered bool
	// elsewhere are the namespaces, other than the release's, that its
	// objects name for themselves (kube-system, a list of watched ones).
	elsewhere map[string]bool
}

// Derive renders the chart and derives the RBAC its operator needs.
func Derive(opts Options) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := newDerivation(opts)
	if err != nil {
		return nil, fmt.Errorf("deriving RBAC: %w", err)
	}
	steps := []func() error{
		d.renderDefaultsAndSamples, // what the chart creates as given
		d.exploreGates,             // what the gates' other values create
		d.renderKindChoices,        // each kind a value may choose
		d.addScannedKinds,          // kinds only the templates' text shows
		d.learnCRDs,                // the chart's CRDs teach the resolver their kinds
		d.grantKinds,               // check and grant every kind
		d.holdChartRoles,           // what the chart's roles grant, the operator must hold
	}
	for _, step := range steps {
		if err := step(); err != nil {
			var req *RequiredValueError
			if errors.As(err, &req) {
				return nil, err
			}
			return nil, fmt.Errorf("deriving RBAC for chart %s: %w", opts.Chart.Name(), err)
		}
	}
	d.grantOperator()
	res := d.result()
	res.Warnings = uniqueProblems(append(res.Warnings, adminWarnings(res)...))
	res.Errors = uniqueProblems(res.Errors)
	return res, nil
}

// listItems are the objects of a List (v1 List or a kind's List) a
// template renders: Helm's client creates each item, never the List.
func listItems(m chart.Manifest) []chart.Manifest {
	if !strings.HasSuffix(m.Object.GetKind(), "List") {
		return nil
	}
	items, ok := m.Object.Object["items"].([]any)
	if !ok {
		return nil
	}
	out := []chart.Manifest{}
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			continue
		}
		out = append(out, chart.Manifest{Source: m.Source, Hook: m.Hook, Object: u})
	}
	return out
}

// uniqueProblems drops repeated problems, keeping the first of each.
func uniqueProblems(ps []Problem) []Problem {
	seen := map[string]bool{}
	var out []Problem
	for _, p := range ps {
		if k := p.String(); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// derivation is one run of Derive: what it rendered and saw so far.
type derivation struct {
	opts     Options
	minor    int
	resolv   *resolver
	renderer *chart.Renderer
	res      *Result
	kinds    map[schema.GroupVersionKind]*created
	renders  []*chart.Rendered
	scans    []templateScan
	gates    *chartGates
	// served is .Capabilities.APIVersions of the target cluster; probes
	// the other APIs the templates test for (CRDs), present in the
	// renders that explore gates.
	served, probes []string
	// base are the chart's default values under the user's.
	base  map[string]any
	rules *ruleSet
	// crdFiles are the chart's CRD files, under crds/.
	crdFiles map[string]bool
	// explored counts the renders that explore gates; failed are the
	// variants that failed to render even with the rest of their set.
	explored int
	failed   map[string]bool
	// explorations are the renders with made-up values.
	explorations map[*chart.Rendered]bool
	// fills are values the chart turned out to need with some gates (a
	// required value, one a fail's condition asks for): they go in every
	// render that explores.
	fills []variant
}

func newDerivation(opts Options) (*derivation, error) {
	minor, err := ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, err
	}
	resolv, err := newResolver(opts.Config)
	if err != nil {
		return nil, err
	}
	renderer, err := opts.Chart.Renderer()
	if err != nil {
		return nil, err
	}
	base, err := valuesutil.CoalesceValues(opts.Chart.Helm, opts.Values)
	if err != nil {
		return nil, fmt.Errorf("default values: %w", err)
	}
	d := &derivation{
		opts: opts, minor: minor, resolv: resolv, renderer: renderer, res: &Result{opts: opts},
		kinds: map[schema.GroupVersionKind]*created{}, scans: scanTemplates(opts.Chart.Helm),
		gates: analyzeGates(opts.Chart.Helm), base: base,
		rules: newRuleSet(), crdFiles: map[string]bool{}, failed: map[string]bool{},
		explorations: map[*chart.Rendered]bool{},
	}
	d.gates.expand(base)
	d.served = servedAPIVersions(minor)
	if resolv.discovered != nil {
		d.served = discoveredAPIVersions(resolv.discovered)
	}
	// Helm installs crds/ before it renders: their APIs are served by then.
	d.served = append(d.served, crdAPIVersions(opts.Chart.Helm)...)
	d.probes = probedAPIs(d.gates, d.served)
	return d, nil
}

// see records a kind a render created; gates nil means the default values
// or a sample's created it.
func (d *derivation) see(m chart.Manifest, gates []string) {
	if items := listItems(m); items != nil {
		for _, item := range items {
			d.see(item, gates)
		}
		return
	}
	gvk := m.GroupVersionKind()
	if strings.Contains(m.Object.GetAPIVersion()+m.Object.GetKind(), ExploredValue) {
		// An apiVersion or kind a made-up value wrote: not one the chart
		// knows (the template's scan or its kind values say what it may be).
		return
	}
	c, ok := d.kinds[gvk]
	if !ok {
		c = &created{gvk: gvk, templates: map[string]bool{}, gates: map[string]bool{}}
		d.kinds[gvk] = c
	}
	c.rendered = true
	c.templates[m.Source] = true
	if ns := m.Object.GetNamespace(); ns != "" && ns != d.releaseNamespace() && !strings.Contains(ns, ExploredValue) {
		if c.elsewhere == nil {
			c.elsewhere = map[string]bool{}
		}
		c.elsewhere[ns] = true
	}
	if gates == nil {
		c.ungated = true
	}
	for _, g := range gates {
		c.gates[g] = true
	}
}

// releaseNamespace is the namespace the chart is rendered into.
func (d *derivation) releaseNamespace() string { return cmp.Or(d.opts.WatchNamespace, "default") }

// render renders the chart with vals over the user's values (what describes
// them, for errors) for the target cluster, which also serves apis, and
// keeps the render.
func (d *derivation) render(vals map[string]any, what string, apis []string) (*chart.Rendered, error) {
	ns := d.releaseNamespace()
	r, err := d.renderer.Render(chart.RenderOptions{Namespace: ns, Values: mergeValues(d.opts.Values, vals),
		KubeVersion: renderKubeVersion(d.minor), ServedAPIVersions: d.served, APIVersions: apis, ReuseKeys: true})
	if err != nil {
		return nil, fmt.Errorf("rendering with %s: %w", what, err)
	}
	d.renders = append(d.renders, r)
	return r, nil
}

func (d *derivation) renderDefaultsAndSamples() error {
	valueSets := append([]map[string]any{nil}, d.opts.SampleValues...)
	for i, vals := range valueSets {
		what := "the default values"
		if i > 0 {
			what = fmt.Sprintf("the values of sample %d", i)
		}
		r, err := d.render(vals, what, nil)
		if err != nil {
			if req, ok := requiredFor(d.gates, err); ok {
				return &RequiredValueError{Chart: d.opts.Chart.Name(), Path: req.Path, Message: req.Message, Err: err}
			}
			return err
		}
		for _, m := range r.Objects {
			d.see(m, nil)
		}
	}
	return nil
}

// addScannedKinds adds the kinds no render created that a template's text
// shows, with the gates of the template.
func (d *derivation) addScannedKinds() error {
	for _, s := range d.scans {
		for _, gvk := range s.Kinds {
			if _, ok := d.kinds[gvk]; ok {
				continue
			}
			c := &created{gvk: gvk, templates: map[string]bool{s.Source: true}, gates: map[string]bool{}}
			if tg := d.gates.Templates[s.Source]; tg != nil {
				for _, g := range templateGateNames(tg) {
					c.gates[g] = true
				}
			}
			d.kinds[gvk] = c
		}
	}
	return nil
}

// capabilitiesGate names a template's test of .Capabilities among its gates.
const capabilitiesGate = "a check of .Capabilities"

// templateGateNames names what decides whether a template renders: the
// tests of its conditions, and its checks of .Capabilities.
func templateGateNames(tg *templateGates) []string {
	var out []string
	for _, a := range tg.Atoms {
		out = append(out, a.String())
	}
	if tg.Capabilities {
		out = append(out, capabilitiesGate)
	}
	return out
}

// learnCRDs teaches the resolver the kinds of the CRDs the chart ships
// (crds/) or renders.
//
// Helm installs crds/ as they are, before anything else: a removed
// apiVersion there fails every install.
func (d *derivation) learnCRDs() error {
	crdErrs, crdWarns := checkCRDFiles(d.renders, d.minor)
	d.res.Errors = append(d.res.Errors, crdErrs...)
	d.res.Warnings = append(d.res.Warnings, crdWarns...)
	learned := map[*unstructured.Unstructured]bool{} // renders share objects
	learn := func(m chart.Manifest) error {
		if learned[m.Object] {
			return nil
		}
		learned[m.Object] = true
		return d.resolv.addCRD(m)
	}
	for _, r := range d.renders {
		for _, m := range r.CRDs {
			d.crdFiles[m.Source] = true
			if err := learn(m); err != nil {
				return err
			}
		}
		for _, m := range r.Objects {
			if m.Object.GetKind() == "CustomResourceDefinition" && m.Object.GetAPIVersion() == "apiextensions.k8s.io/v1" {
				if err := learn(m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// grantKinds checks each kind's API against the Kubernetes version, resolves
// its resource and grants what Helm needs to manage it.
func (d *derivation) grantKinds() error {
	gvkList := make([]schema.GroupVersionKind, 0, len(d.kinds))
	for gvk := range d.kinds {
		gvkList = append(gvkList, gvk)
	}
	sort.Slice(gvkList, func(i, j int) bool { return lessGVK(gvkList[i], gvkList[j]) })
	for _, gvk := range gvkList {
		d.grantKind(d.kinds[gvk])
	}
	if len(d.crdFiles) > 0 {
		d.rules.add(false, "apiextensions.k8s.io", "customresourcedefinitions", nil, []string{"get", "list", "watch", "create"},
			"CRDs under crds/ ("+strings.Join(sortedKeys(d.crdFiles), ", ")+"): Helm creates them on install and never updates or deletes them")
	}
	return nil
}

func (d *derivation) grantKind(c *created) {
	gvk := c.gvk
	k := Kind{GroupVersionKind: gvk, Templates: sortedKeys(c.templates), ScannedOnly: !c.rendered}
	if !c.ungated {
		k.Gates = sortedKeys(c.gates)
	}
	status, msg := checkAPI(gvk, d.minor)
	for _, t := range k.Templates {
		p := Problem{Template: t, GVK: gvk, Message: msg}
		switch {
		case status == apiRemoved && c.ungated:
			d.res.Errors = append(d.res.Errors, p)
		case status == apiRemoved:
			p.Message += d.gatedRemovedAdvice(c, t)
			d.res.Warnings = append(d.res.Warnings, p)
		case status == apiDeprecated:
			d.res.Warnings = append(d.res.Warnings, p)
		}
	}
	if status == apiRemoved && !c.rendered {
		// The target cluster never receives it: nothing to grant, nothing
		// the operator creates (the warning says so).
		return
	}
	target := replacementFor(gvk, d.minor)
	if status == apiRemoved && target == gvk {
		// Removed without a replacement: nothing to grant, the error says what to do.
		d.res.Kinds = append(d.res.Kinds, k)
		return
	}
	m := d.resolv.resolve(target)
	k.Resource, k.Namespaced, k.ResolvedBy = m.Resource, m.Namespaced, m.Source
	d.res.Kinds = append(d.res.Kinds, k)
	reason := d.reason(k, target, m)
	// Objects in a namespace of their own are out of reach of a Role in
	// the watched namespaces (OLM grants permissions there only): the rule
	// must hold cluster-wide.
	inWatched := m.Namespaced && len(c.elsewhere) == 0
	if m.Namespaced && !inWatched {
		reason += "; also in namespace " + strings.Join(sortedKeys(c.elsewhere), ", ") + ", so cluster-wide"
	}
	d.rules.add(inWatched, target.Group, m.Resource, nil, manageVerbs, reason)
}

// reason says why a kind is granted, for role.yaml, and warns about what the
// derivation could not prove.
func (d *derivation) reason(k Kind, target schema.GroupVersionKind, m mapping) string {
	gvk := k.GroupVersionKind
	reason := fmt.Sprintf("%s %s (%s)", gvk.GroupVersion(), gvk.Kind, strings.Join(k.Templates, ", "))
	if target != gvk {
		reason = fmt.Sprintf("%s %s in place of removed %s (%s)", target.GroupVersion(), target.Kind, gvk.GroupVersion(), strings.Join(k.Templates, ", "))
	}
	if len(k.Gates) > 0 {
		reason += " when " + gatesText(k.Gates)
	}
	if k.ScannedOnly {
		reason += "; found by scanning the template"
		if !d.renderedGroupKind(gvk.GroupKind()) {
			d.res.Warnings = append(d.res.Warnings, Problem{Template: k.Templates[0], GVK: gvk,
				Message: fmt.Sprintf("%s %s appears in the template but no render created it (gated by %s, which chartpilot could not turn on); it is granted anyway", gvk.GroupVersion(), gvk.Kind, describeGates(k.Gates))})
		}
	}
	if m.Source == SourceGuessed {
		d.res.Warnings = append(d.res.Warnings, Problem{Template: k.Templates[0], GVK: gvk, Message: unknownKindMessage(gvk, target, m, d.minor)})
		reason += "; resource name guessed"
	}
	return reason
}

func (d *derivation) holdChartRoles() error {
	d.res.Warnings = append(d.res.Warnings, addHeldPermissions(d.releaseNamespace(), d.rules, d.renders, d.explorations)...)
	return nil
}

// renderedGroupKind says whether a render created gk in some version: a
// version found only in the text is the other branch of a switch (on
// .Capabilities, say), granted by the same rule.
func (d *derivation) renderedGroupKind(gk schema.GroupKind) bool {
	for gvk, c := range d.kinds {
		if c.rendered && gvk.GroupKind() == gk {
			return true
		}
	}
	return false
}

// gatedRemovedAdvice completes the message of a removed API that only gates
// render (or no render at all): what creates it and what to do.
func (d *derivation) gatedRemovedAdvice(c *created, template string) string {
	gates := sortedKeys(c.gates)
	if !c.rendered && slices.Contains(gates, capabilitiesGate) {
		return fmt.Sprintf("; the chart writes it only on clusters a check of .Capabilities picks, and no render for Kubernetes 1.%d did, with the default values or the values chartpilot explored (%s decides): nothing to do for 1.%d, and nothing is granted for it; drop that branch from %s to be rid of this warning",
			d.minor, describeGates(gates), d.minor, template)
	}
	if !c.rendered {
		return fmt.Sprintf("; no render for Kubernetes 1.%d creates it, with the default values or the values chartpilot explored (%s decides): nothing is granted for it, and a custom resource whose values make the chart create it fails to install; remove it from %s, or gate it on the Kubernetes version",
			d.minor, describeGates(gates), template)
	}
	return fmt.Sprintf("; the default values do not create it, %s does: a custom resource that sets that fails to install on Kubernetes 1.%d (the operator's status names the removed API); leave it unset, or fix %s",
		describeGates(gates), d.minor, template)
}

// gatesText says gates in words, for role.yaml's comments:
// "autoscaling.enabled is set, replicaCount=2".
func gatesText(gates []string) string {
	out := make([]string, 0, len(gates))
	for _, g := range gates {
		switch {
		case strings.HasPrefix(g, "the cluster") || strings.HasPrefix(g, "values ") || strings.HasPrefix(g, "a check") || strings.ContainsAny(g, "=<> "):
			out = append(out, g)
		case strings.HasPrefix(g, "!"):
			out = append(out, g[1:]+" is unset")
		default:
			out = append(out, g+" is set")
		}
	}
	return strings.Join(out, ", ")
}

// describeGates names gates for a message.
func describeGates(gates []string) string {
	if len(gates) == 0 {
		return "a condition chartpilot cannot read"
	}
	return strings.Join(gates, ", ")
}

// grantOperator adds what the operator itself needs.
func (d *derivation) grantOperator() {
	o := d.opts.Owner
	owner := o.Resource + "." + o.Group
	d.rules.add(true, o.Group, o.Resource, nil, []string{"get", "list", "watch", "patch", "update"}, owner+": the operator's custom resource (watch, finalizer)")
	d.rules.add(true, o.Group, o.Resource+"/status", nil, []string{"get", "patch", "update"}, owner+": its status")
	d.rules.add(true, o.Group, o.Resource+"/finalizers", nil, []string{"update"}, owner+": owner references blocking deletion of what it creates")
	d.rules.add(true, "", "secrets", nil, manageVerbs, "Helm release storage (sh.helm.release.v1.* Secrets)")
	d.rules.add(true, "", "events", nil, []string{"create", "patch"}, "events about the custom resource")
	d.rules.add(true, "coordination.k8s.io", "leases", nil, []string{"get", "create", "update"}, "leader election")
	for _, r := range metricsauth.AuthRules() {
		d.rules.add(false, r.APIGroups[0], r.Resources[0], nil, r.Verbs, "the metrics endpoint (--metrics-secure, the default): checks each scraper's token and its permission to get "+metricsauth.Path)
	}
	if d.makesPods() {
		d.rules.add(true, "", "pods", nil, []string{"get", "list", "watch"}, "the health of the chart's workloads in the custom resource's status (CrashLoopBackOff, ImagePullBackOff...)")
	}
	if scaled := d.scalable(); len(scaled) > 0 {
		d.rules.add(true, autoscale.HPAKind.Group, "horizontalpodautoscalers", nil, manageVerbs,
			"spec."+autoscale.Field+": the HorizontalPodAutoscalers the operator adds for "+strings.Join(scaled, ", "))
	}
	if d.opts.Backup {
		d.grantBackup()
	}
	if len(d.opts.MigrateStorage) > 0 {
		crds := strings.Join(d.opts.MigrateStorage, ", ")
		for _, r := range storageversion.CRDRules(d.opts.MigrateStorage...) {
			d.rules.add(false, r.APIGroups[0], r.Resources[0], r.ResourceNames, r.Verbs,
				crds+": the storage migration at start-up (its CRs rewritten in the storage version, then status.storedVersions trimmed)")
		}
	}
}

// scalable lists the kinds the operator adds an HPA for when a custom
// resource asks (package operator/autoscale): the chart's Deployments and
// StatefulSets, unless the chart's own values hold the autoscaling key
// (then any HPA is the chart's, granted as one of its kinds).
func (d *derivation) scalable() []string {
	if autoscale.ChartOwns(d.opts.Chart.Helm) {
		return nil
	}
	var out []string
	for gvk := range d.kinds {
		if autoscale.IsTarget(gvk.GroupKind()) && !slices.Contains(out, gvk.Kind) {
			out = append(out, gvk.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// makesPods says whether the chart creates workloads whose pods the
// operator reads for their health (the kinds whose pod template it labels).
func (d *derivation) makesPods() bool {
	for gvk := range d.kinds {
		switch gvk.GroupKind() {
		case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
			schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
			return true
		}
	}
	return false
}

// result lays the rules out in the ClusterRole and, when the operator
// watches one namespace, the Role.
func (d *derivation) result() *Result {
	res, opts := d.res, d.opts
	res.Rules = d.rules.list()
	res.Renders = d.renders
	res.ClusterRole = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: metav1.ObjectMeta{Name: opts.Name}, Rules: []rbacv1.PolicyRule{}}
	if opts.WatchNamespace != "" {
		res.Role = &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.WatchNamespace}, Rules: []rbacv1.PolicyRule{}}
	}
	for _, r := range res.Rules {
		if r.Namespaced && res.Role != nil {
			res.Role.Rules = append(res.Role.Rules, r.PolicyRule)
		} else {
			res.ClusterRole.Rules = append(res.ClusterRole.Rules, r.PolicyRule)
		}
	}
	return res
}

// manageVerbs are what Helm needs for a kind it creates: get to read the live
// object before an upgrade, list and watch for waits and drift detection,
// create on install, update and patch on upgrade and drift repair, delete on
// uninstall and when an upgrade drops the object.
var manageVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func lessGVK(a, b schema.GroupVersionKind) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Version < b.Version
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
