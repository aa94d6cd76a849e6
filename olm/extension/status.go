package extension

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/bundle/installer"
)

// Observation is what the cluster holds of one ClusterExtension.
type Observation struct {
	Name string
	// Extension is nil when the ClusterExtension does not exist.
	Extension *Extension
	// Catalogs are the ClusterCatalogs its selector matches.
	Catalogs []Catalog
	// NamespaceFound and ServiceAccountFound say whether its install
	// namespace and installer ServiceAccount exist; ServiceAccountFound is
	// true where the cluster's OLM v1 uses none (Features).
	NamespaceFound      bool
	ServiceAccountFound bool
	// Features are the cluster's OLM v1's.
	Features Features
}

// Observe reads the ClusterExtension name, the catalogs it selects, its
// namespace and its installer ServiceAccount.
func Observe(ctx context.Context, c client.Client, name string) (*Observation, error) {
	f, err := ReadFeatures(ctx, c)
	if err != nil {
		return nil, err
	}
	return observe(ctx, c, name, f)
}

// observe is Observe on a cluster whose OLM v1 has the features f.
func observe(ctx context.Context, c client.Client, name string, f Features) (*Observation, error) {
	o := &Observation{Name: name, Features: f}
	ext, err := getExtension(ctx, c, name)
	if err != nil || ext == nil {
		return o, err
	}
	o.Extension = ext
	selector := ""
	if f := ext.Spec.Source.Catalog; f != nil && f.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(f.Selector)
		if err != nil {
			return nil, fmt.Errorf("ClusterExtension %s: catalog selector: %w", name, err)
		}
		selector = sel.String()
	}
	if o.Catalogs, err = listCatalogs(ctx, c, selector); err != nil {
		return nil, err
	}
	var ns corev1.Namespace
	if o.NamespaceFound, err = found(c.Get(ctx, client.ObjectKey{Name: ext.Spec.Namespace}, &ns)); err != nil {
		return nil, err
	}
	o.ServiceAccountFound = true // none to find where OLM v1 uses none
	if name := ext.Spec.InstallerServiceAccount(); name != "" && o.Features.InstallerServiceAccount {
		var sa corev1.ServiceAccount
		key := client.ObjectKey{Namespace: ext.Spec.Namespace, Name: name}
		if o.ServiceAccountFound, err = found(c.Get(ctx, key, &sa)); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func found(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// Report is where a ClusterExtension stands and, when it is stuck, why.
type Report struct {
	Extension      string `json:"extension"`
	Package        string `json:"package,omitempty"`
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Installed is true once the bundle asked for is installed and
	// operator-controller has reached the spec's current generation.
	Installed bool            `json:"installed"`
	Bundle    *BundleMetadata `json:"bundle,omitempty"`
	// Conditions are the ClusterExtension's, each with what it means.
	Conditions []Condition     `json:"conditions,omitempty"`
	Catalogs   []CatalogReport `json:"catalogs,omitempty"`
	// Problems say what keeps it from being installed and what to do.
	Problems []Problem `json:"problems,omitempty"`
}

// Condition is a status condition and what it means.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Stale is set when the condition is of an older generation of the spec.
	Stale   bool   `json:"stale,omitempty"`
	Meaning string `json:"meaning"`
}

// CatalogReport is one ClusterCatalog the extension searches.
type CatalogReport struct {
	Name    string `json:"name"`
	Image   string `json:"image,omitempty"`
	Serving bool   `json:"serving"`
	// Resolved is the image by digest catalogd serves.
	Resolved string `json:"resolved,omitempty"`
	Message  string `json:"message,omitempty"`
}

// ProblemKind names a kind of problem.
type ProblemKind string

// The problems Diagnose names.
const (
	ProblemNotFound              ProblemKind = "ExtensionNotFound"
	ProblemNamespaceMissing      ProblemKind = "NamespaceMissing"
	ProblemServiceAccountMissing ProblemKind = "ServiceAccountMissing"
	ProblemNoCatalog             ProblemKind = "NoCatalog"
	ProblemCatalogNotServing     ProblemKind = "CatalogNotServing"
	ProblemCatalogUnpullable     ProblemKind = "CatalogImageNotPullable"
	ProblemPackageNotFound       ProblemKind = "PackageNotFound"
	ProblemNoVersionMatches      ProblemKind = "NoVersionMatches"
	ProblemNoUpgradePath         ProblemKind = "NoUpgradePath"
	ProblemBundleUnsupported     ProblemKind = "BundleUnsupported"
	ProblemBundleUnpullable      ProblemKind = "BundleImageNotPullable"
	ProblemUpgradeUnsafe         ProblemKind = "CRDUpgradeUnsafe"
	ProblemPermissionDenied      ProblemKind = "InstallerPermissionDenied"
	ProblemRetrying              ProblemKind = "Retrying"
	ProblemBlocked               ProblemKind = "Blocked"
	ProblemInvalidConfiguration  ProblemKind = "InvalidConfiguration"
)

// Problem is one reason the extension is not installed, with the fix.
type Problem struct {
	Kind    ProblemKind `json:"kind"`
	Message string      `json:"message"`
	Fix     string      `json:"fix"`
	// Missing is, for InstallerPermissionDenied, what the installer
	// ServiceAccount lacked, read from the API server's refusal that
	// operator-controller reports.
	Missing *MissingRules `json:"missing,omitempty"`
}

// MissingRules are the rules the installer ServiceAccount lacked.
type MissingRules struct {
	Rules []rbacv1.PolicyRule `json:"rules"`
	// Namespace is where the request was refused; "" cluster-wide.
	Namespace string `json:"namespace,omitempty"`
	// Escalation: it asked to grant, in a role, rules it does not hold.
	Escalation bool `json:"escalation,omitempty"`
}

// Report turns the observation into a report.
func (o *Observation) Report() *Report {
	r := &Report{Extension: o.Name}
	ext := o.Extension
	if ext == nil {
		r.Problems = []Problem{{Kind: ProblemNotFound, Message: fmt.Sprintf("there is no ClusterExtension %s", o.Name),
			Fix: "install it: chartpilot olm v1 install PACKAGE --catalog-image IMAGE -n NAMESPACE (kubectl get clusterextensions lists the others)"}}
		return r
	}
	if f := ext.Spec.Source.Catalog; f != nil {
		r.Package = f.PackageName
	}
	r.Namespace, r.ServiceAccount = ext.Spec.Namespace, ext.Spec.InstallerServiceAccount()
	r.Bundle = ext.InstalledBundle()
	for _, c := range ext.Status.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Stale: c.ObservedGeneration != ext.Generation, Meaning: conditionMeaning(c, ext)})
	}
	for i := range o.Catalogs {
		r.Catalogs = append(r.Catalogs, catalogReport(&o.Catalogs[i]))
	}
	r.Installed = isInstalled(ext)
	if !r.Installed {
		r.Problems = Diagnose(o)
	}
	return r
}

// isInstalled: Installed is True and operator-controller reached the
// spec's generation (Progressing Succeeded).
func isInstalled(ext *Extension) bool {
	inst := apimeta.FindStatusCondition(ext.Status.Conditions, TypeInstalled)
	prog := apimeta.FindStatusCondition(ext.Status.Conditions, TypeProgressing)
	return inst != nil && inst.Status == metav1.ConditionTrue && prog != nil && prog.Reason == ReasonSucceeded &&
		prog.ObservedGeneration == ext.Generation && ext.InstalledBundle() != nil
}

func catalogReport(cat *Catalog) CatalogReport {
	cr := CatalogReport{Name: cat.Name}
	if cat.Spec.Source.Image != nil {
		cr.Image = cat.Spec.Source.Image.Ref
	}
	if rs := cat.Status.ResolvedSource; rs != nil && rs.Image != nil {
		cr.Resolved = rs.Image.Ref
	}
	if s := apimeta.FindStatusCondition(cat.Status.Conditions, TypeServing); s != nil && s.Status == metav1.ConditionTrue {
		cr.Serving = true
	}
	if p := apimeta.FindStatusCondition(cat.Status.Conditions, TypeProgressing); p != nil && p.Reason != ReasonSucceeded {
		cr.Message = p.Message
	}
	return cr
}

// conditionMeaning says in a line what a condition of ext tells.
func conditionMeaning(c metav1.Condition, ext *Extension) string {
	switch c.Type {
	case TypeInstalled:
		switch c.Status {
		case metav1.ConditionTrue:
			return "a bundle is installed (the one status.install.bundle names)"
		case metav1.ConditionFalse:
			return "no bundle is installed yet: see Progressing for why"
		}
		return "operator-controller cannot tell what is installed: it cannot act as the installer ServiceAccount or read its releases"
	case TypeProgressing:
		switch {
		case c.Reason == ReasonSucceeded:
			return "operator-controller reached the state the spec asks for"
		case terminal(&c):
			return "a terminal error: operator-controller does not retry until the spec changes"
		}
		return "operator-controller keeps retrying, with backoff: the message is the last error"
	case TypeDeprecated, TypePackageDeprecated, TypeChannelDeprecated, TypeBundleDeprecated:
		if c.Status == metav1.ConditionTrue {
			return wayOff(c.Type, ext)
		}
		return "not deprecated"
	}
	return ""
}

// wayOff says what a deprecation condition of ext deprecates and how to
// move off it.
func wayOff(conditionType string, ext *Extension) string {
	list := "chartpilot catalog render IMAGE lists what the catalog offers"
	switch conditionType {
	case TypeBundleDeprecated:
		return fmt.Sprintf("the catalog deprecates the installed bundle: move to a version it does not deprecate (%s): chartpilot olm v1 upgrade %s --version VERSION", list, ext.Name)
	case TypeChannelDeprecated:
		return fmt.Sprintf("the catalog deprecates a channel the extension follows: follow another (%s): chartpilot olm v1 upgrade %s --channels CHANNEL", list, ext.Name)
	case TypePackageDeprecated:
		return fmt.Sprintf("the catalog deprecates the whole package: install what the message recommends instead, then chartpilot olm v1 uninstall %s", ext.Name)
	}
	return "the catalog deprecates the package, a channel or the bundle: see the condition of each"
}

// Deprecations are the extension's deprecation conditions that are True,
// but the roll-up: each with its way off in Meaning.
func (r *Report) Deprecations() []Condition {
	var out []Condition
	for _, c := range r.Conditions {
		if deprecation(c.Type) && c.Type != TypeDeprecated && c.Status == string(metav1.ConditionTrue) {
			out = append(out, c)
		}
	}
	return out
}

// Diagnose names what keeps the observed extension from being installed,
// each with the fix, from the most basic up: namespace, ServiceAccount,
// catalogs, then operator-controller's own message.
func Diagnose(o *Observation) []Problem {
	ext := o.Extension
	var out []Problem
	if !o.NamespaceFound {
		out = append(out, Problem{Kind: ProblemNamespaceMissing,
			Message: fmt.Sprintf("the install namespace %s does not exist", ext.Spec.Namespace),
			Fix:     fmt.Sprintf("create it (kubectl create namespace %s) with the installer ServiceAccount and its RBAC, or install again with chartpilot olm v1 install, which creates them", ext.Spec.Namespace)})
	}
	if !o.ServiceAccountFound {
		out = append(out, Problem{Kind: ProblemServiceAccountMissing,
			Message: fmt.Sprintf("the installer ServiceAccount %s/%s does not exist: operator-controller installs as it and refuses to go on", ext.Spec.Namespace, ext.Spec.InstallerServiceAccount()),
			Fix: fmt.Sprintf("create it and bind it the rules the bundle needs (chartpilot olm v1 install creates both), or point spec.serviceAccount.name at one that exists: kubectl -n %s create serviceaccount %s",
				ext.Spec.Namespace, ext.Spec.InstallerServiceAccount())})
	}
	out = append(out, catalogProblems(o)...)
	prog := apimeta.FindStatusCondition(ext.Status.Conditions, TypeProgressing)
	if prog == nil || prog.Reason == ReasonSucceeded {
		if len(out) == 0 {
			out = append(out, Problem{Kind: ProblemRetrying, Message: "operator-controller has not reported on the current spec yet",
				Fix: "wait; if it stays so, check that operator-controller runs (chartpilot cluster status, or its pod in olmv1-system)"})
		}
		return out
	}
	p := classify(prog, ext)
	// A missing ServiceAccount is said once, from what the cluster holds.
	if p.Kind == ProblemServiceAccountMissing && !o.ServiceAccountFound {
		return out
	}
	// A catalog that serves nothing explains "no bundles found" already.
	if (p.Kind == ProblemPackageNotFound || p.Kind == ProblemNoVersionMatches || p.Kind == ProblemCatalogNotServing) &&
		HasProblem(out, ProblemNoCatalog, ProblemCatalogNotServing, ProblemCatalogUnpullable) {
		return out
	}
	return append(out, p)
}

// HasProblem says whether ps holds a problem of one of the kinds.
func HasProblem(ps []Problem, kinds ...ProblemKind) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return slices.Contains(kinds, p.Kind) })
}

// catalogProblems are the extension's catalogs that serve nothing.
func catalogProblems(o *Observation) []Problem {
	sel := "all ClusterCatalogs"
	if f := o.Extension.Spec.Source.Catalog; f != nil && f.Selector != nil {
		if s, err := metav1.LabelSelectorAsSelector(f.Selector); err == nil {
			sel = "selector " + s.String()
		}
	}
	if len(o.Catalogs) == 0 {
		return []Problem{{Kind: ProblemNoCatalog, Message: fmt.Sprintf("no ClusterCatalog matches the ClusterExtension's %s", sel),
			Fix: "create the catalog: chartpilot olm v1 install --catalog-image IMAGE creates one for the extension, or kubectl get clustercatalogs --show-labels to fix the selector"}}
	}
	var out []Problem
	serving := 0
	for i := range o.Catalogs {
		cat := &o.Catalogs[i]
		cr := catalogReport(cat)
		if cr.Serving {
			serving++
		}
		if cr.Message == "" {
			continue
		}
		if pullError(cr.Message) {
			out = append(out, Problem{Kind: ProblemCatalogUnpullable,
				Message: fmt.Sprintf("catalogd cannot pull the image %s of ClusterCatalog %s: %s", cr.Image, cat.Name, cr.Message),
				Fix:     "check the reference and push the image (chartpilot catalog build --push REF), that catalogd reaches the registry (on a local cluster: a loopback registry, or the cluster's), and its credentials (catalogd's --global-pull-secret)"})
			continue
		}
		if !cr.Serving {
			out = append(out, Problem{Kind: ProblemCatalogNotServing,
				Message: fmt.Sprintf("ClusterCatalog %s (%s) is not serving: %s", cat.Name, cr.Image, cr.Message),
				Fix:     "fix what the message names; check the catalog with chartpilot catalog validate on its directory"})
		}
	}
	if serving == 0 && len(out) == 0 {
		out = append(out, Problem{Kind: ProblemCatalogNotServing,
			Message: fmt.Sprintf("none of the ClusterCatalogs (%s) serves yet", catalogNames(o.Catalogs)),
			Fix:     "wait for catalogd to unpack them; if they stay so, check that catalogd runs and that spec.availabilityMode is Available"})
	}
	return out
}

func catalogNames(cats []Catalog) string {
	names := make([]string, 0, len(cats))
	for _, c := range cats {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// terminal says whether a Progressing condition reports an error that
// operator-controller does not retry until the spec changes: it sets such
// a condition False, with reason Blocked or one that names the error
// (InvalidConfiguration), and a retried one True, with reason Retrying.
func terminal(c *metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse || c.Reason == ReasonBlocked
}

// A message problem is a problem that OLM v1 tells in a message only:
// operator-controller's reasons say whether it retries (Retrying, Blocked),
// and catalogd's whether a catalog serves, not what failed. The words
// matched are the narrowest of operator-controller's and catalogd's
// messages (v1.2 to v1.11) that tell, each written here only.
type messageProblem struct {
	kind ProblemKind
	// words match a message that holds every word of one of the groups.
	words [][]string
	// fix may name the extension's {name}, {namespace}, {installer},
	// {package} and {filter} (its version range and channels).
	fix string
}

// matches says whether msg lacks no word of one of m's groups.
func (m *messageProblem) matches(msg string) bool {
	lacks := func(w string) bool { return !strings.Contains(msg, w) }
	return slices.ContainsFunc(m.words, func(group []string) bool { return !slices.ContainsFunc(group, lacks) })
}

// pullWords tell that pulling an image failed.
var pullWords = []string{"pinging container registry", "manifest unknown", "error creating image source", "error getting manifest",
	"reading manifest", "connection refused", "no such host", "unauthorized", "requested access to the resource is denied",
	"error parsing image reference", "name unknown", "http: server gave HTTP response to HTTPS client"}

// pullError says whether an unpack message is about pulling the image.
func pullError(msg string) bool {
	return slices.ContainsFunc(pullWords, func(w string) bool { return strings.Contains(msg, w) })
}

// each is one group per word, each of them with all.
func each(words []string, all ...string) [][]string {
	out := make([][]string, 0, len(words))
	for _, w := range words {
		out = append(out, append([]string{w}, all...))
	}
	return out
}

const noBundles = "no bundles found for package"

// messageProblems are matched in order: the first that matches names the
// problem.
var messageProblems = []messageProblem{
	{ProblemServiceAccountMissing, [][]string{{"missing ServiceAccount"}, {`service account "`, "not found"}},
		"create the ServiceAccount {installer} in {namespace} with the bundle's rules (chartpilot olm v1 install does)"},
	{ProblemCatalogNotServing, [][]string{{"is not being served"}, {"cache for catalog"}},
		"wait for catalogd to unpack the catalog; if it stays so, kubectl get clustercatalogs shows why (chartpilot olm v1 status names it)"},
	{ProblemNoUpgradePath, [][]string{{"error upgrading from currently installed version"}},
		"no bundle in range upgrades from the installed one along the catalog's edges: publish one whose channel entry replaces or skips it (chartpilot catalog add), widen --version, or allow any version with --upgrade-constraint-policy SelfCertified"},
	{ProblemNoVersionMatches, [][]string{{noBundles, "matching version"}, {noBundles, "in channels"}},
		"no bundle of {package} fits {filter}: list its versions with chartpilot catalog render IMAGE, then chartpilot olm v1 upgrade {name} --version RANGE (or --channels) with one that exists"},
	{ProblemPackageNotFound, [][]string{{noBundles}},
		"no catalog the extension searches has a package {package}: check the name (chartpilot catalog render IMAGE lists the packages) or add the catalog that has it"},
	{ProblemRetrying, [][]string{{"found bundles for package"}},
		"two catalogs of the same priority offer the package: select one (--catalog-selector, or the ClusterCatalog created from --catalog-image), or raise one's spec.priority"},
	{ProblemBundleUnsupported, [][]string{{"do not support targeting all namespaces"}, {"do not support target namespaces"}},
		"give the namespace the operator watches (chartpilot olm v1 install --watch-namespace NS sets config.inline.watchNamespace, where OLM v1 runs with --feature-gates=" + SingleOwnNamespaceGate + "=true), or add {type: AllNamespaces, supported: true} to the CSV's spec.installModes, or install it with OLM v0"},
	{ProblemBundleUnsupported, [][]string{{"webhookDefinitions are not supported"}},
		"this cluster's OLM v1 installs no bundle with webhooks: v1.3 and later do when the cluster has cert-manager or OpenShift's service-ca to issue their certificates; else drop spec.webhookdefinitions from the CSV, or install it with OLM v0"},
	// OLM v1 misspelled it before it fixed it.
	{ProblemBundleUnsupported, [][]string{{"apiServiceDefintions are not supported"}, {"apiServiceDefinitions are not supported"}},
		"OLM v1 installs no bundle that owns APIServices: drop spec.apiservicedefinitions from the CSV, or install it with OLM v0"},
	{ProblemBundleUnsupported, [][]string{{"has a dependency declared via property"}},
		"OLM v1 resolves no dependencies: drop the bundle's olm.package.required / olm.gvk.required / olm.constraint properties (dependencies.yaml) and install what it needs first"},
	{ProblemBundleUnsupported, [][]string{{"bundle contains unsupported resource"}},
		"OLM v1 installs only the kinds registry+v1 allows in manifests/: remove the kind the message names from the bundle"},
	{ProblemUpgradeUnsafe, [][]string{{"validating upgrade for CRD"}},
		"the new CRD would break existing custom resources (OLM v1's CRD upgrade safety check): make the change compatible (chartpilot catalog add refuses it unless --allow-unsafe-api-changes), or, once every CR is known to fit, upgrade with --crd-upgrade-safety-enforcement None"},
	{ProblemBundleUnpullable, each(pullWords, "for resolved bundle"),
		"operator-controller cannot pull the bundle image the catalog names: push it (chartpilot bundle build --tag REF, then chartpilot bundle push REF) to a registry operator-controller reaches, or fix the image in the catalog"},
}

// fillIn writes the names of ext into a fix.
func fillIn(fix string, ext *Extension) string {
	var f CatalogFilter
	if ext.Spec.Source.Catalog != nil {
		f = *ext.Spec.Source.Catalog
	}
	return strings.NewReplacer("{name}", ext.Name, "{namespace}", ext.Spec.Namespace, "{installer}", ext.Spec.InstallerServiceAccount(),
		"{package}", f.PackageName, "{filter}", describeFilter(f.Version, f.Channels)).Replace(fix)
}

// classify turns operator-controller's Progressing condition into a
// problem: by its message where that tells (messageProblems, the rule the
// installer lacks), else by its reason.
func classify(prog *metav1.Condition, ext *Extension) Problem {
	msg := prog.Message
	for i := range messageProblems {
		if m := &messageProblems[i]; m.matches(msg) {
			return Problem{Kind: m.kind, Message: msg, Fix: fillIn(m.fix, ext)}
		}
	}
	if m, ok := installer.Explain(msg); ok && ext.Spec.InstallerServiceAccount() != "" {
		return permissionProblem(msg, m, ext)
	}
	switch {
	case prog.Reason == ReasonInvalidConfiguration:
		return Problem{Kind: ProblemInvalidConfiguration, Message: msg,
			Fix: fillIn("fix what the message names in the ClusterExtension's spec.config (kubectl edit clusterextension {name}); operator-controller tries again once the spec changes", ext)}
	case terminal(prog):
		return Problem{Kind: ProblemBlocked, Message: msg, Fix: "see the message; operator-controller does not retry until the spec changes (chartpilot olm v1 upgrade changes it)"}
	}
	return Problem{Kind: ProblemRetrying, Message: msg, Fix: "see the message; operator-controller's log has the details (chartpilot cluster status names it)"}
}

// permissionProblem names the rule the installer lacks: the API server's
// refusal of operator-controller's request as the installer, exact for
// that request (operator-controller stops at the first).
func permissionProblem(msg string, m *installer.Missing, ext *Extension) Problem {
	return Problem{Kind: ProblemPermissionDenied, Message: msg,
		Missing: &MissingRules{Rules: m.Rules, Namespace: m.Namespace, Escalation: m.Escalation},
		Fix: fmt.Sprintf("%s (installer ServiceAccount %s/%s); or install again with chartpilot olm v1 install, which derives the installer's rules from the bundle and binds them",
			m.String(), ext.Spec.Namespace, ext.Spec.InstallerServiceAccount())}
}

func describeFilter(version string, channels []string) string {
	var parts []string
	if version != "" {
		parts = append(parts, fmt.Sprintf("version range %q", version))
	}
	if len(channels) > 0 {
		parts = append(parts, "channels "+strings.Join(channels, ", "))
	}
	if len(parts) == 0 {
		return "the spec"
	}
	return strings.Join(parts, " and ")
}

func deprecation(conditionType string) bool {
	return conditionType == TypeDeprecated || conditionType == TypePackageDeprecated ||
		conditionType == TypeChannelDeprecated || conditionType == TypeBundleDeprecated
}

// Summary is the report in a line.
func (r *Report) Summary() string {
	if r.Installed {
		return fmt.Sprintf("%s installed: %s %s", r.Extension, r.Bundle.Name, r.Bundle.Version)
	}
	if len(r.Problems) > 0 {
		return fmt.Sprintf("%s not installed: %s: %s", r.Extension, r.Problems[0].Kind, firstLine(r.Problems[0].Message))
	}
	return r.Extension + " not installed"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ClusterExtension %s", r.Extension)
	switch {
	case r.Package != "" && r.ServiceAccount != "":
		fmt.Fprintf(&b, " (package %s, namespace %s, installer %s)", r.Package, r.Namespace, r.ServiceAccount)
	case r.Package != "":
		fmt.Fprintf(&b, " (package %s, namespace %s)", r.Package, r.Namespace)
	}
	b.WriteString("\n")
	if r.Bundle != nil {
		fmt.Fprintf(&b, "  installed bundle: %s %s\n", r.Bundle.Name, r.Bundle.Version)
	}
	for _, c := range r.Catalogs {
		state := "serving"
		if !c.Serving {
			state = "NOT serving"
		}
		fmt.Fprintf(&b, "  catalog %s (%s): %s\n", c.Name, c.Image, state)
	}
	for _, c := range r.Conditions {
		if c.Meaning == "" || deprecation(c.Type) && c.Status != string(metav1.ConditionTrue) {
			// Four lines of "not deprecated" say nothing; nor do the
			// condition types operator-controller fills in when it fails.
			continue
		}
		stale := ""
		if c.Stale {
			stale = " (of an older spec)"
		}
		fmt.Fprintf(&b, "  %s=%s %s%s: %s\n", c.Type, c.Status, c.Reason, stale, c.Meaning)
		if c.Message != "" && c.Reason != ReasonSucceeded {
			fmt.Fprintf(&b, "      %s\n", firstLine(c.Message))
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "problem %s: %s\n  fix: %s\n", p.Kind, p.Message, p.Fix)
	}
	if r.Installed {
		b.WriteString("installed\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
