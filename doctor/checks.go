package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/internal/podhealth"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
	"github.com/chartpilot/chartpilot/rbac"
)

// maxCRs bounds the custom resources reported one by one.
const maxCRs = 20

// deploymentChecks checks the operator's Deployments (the CSV's, else those
// running as the ServiceAccount) and their pods.
func (d *doctor) deploymentChecks(ctx context.Context) error {
	ns := d.opts.Namespace
	names := d.deployments
	if len(names) == 0 && d.opts.ServiceAccount != "" {
		saNS, sa, _ := strings.Cut(d.opts.ServiceAccount, "/")
		var list appsv1.DeploymentList
		if err := d.c.List(ctx, &list, client.InNamespace(saNS)); err != nil {
			return fmt.Errorf("doctor: listing Deployments: %w", err)
		}
		for _, dep := range list.Items {
			if cmp.Or(dep.Spec.Template.Spec.ServiceAccountName, "default") == sa {
				names = append(names, dep.Name)
			}
		}
		ns = saNS
	}
	if len(names) == 0 {
		if d.opts.Package != "" || d.opts.ServiceAccount != "" {
			d.add(Check{Check: CheckDeployment, Severity: Warn, Message: "no operator Deployment found",
				Fix: "if the operator runs outside the cluster (chartpilot run), check its log; else install it"})
		}
		return nil
	}
	for _, name := range names {
		dep := &appsv1.Deployment{}
		obj := "deployment/" + name
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); apierrors.IsNotFound(err) {
			d.add(Check{Check: CheckDeployment, Severity: Fail, Object: obj, Message: "not found in " + ns, Fix: "see the ClusterServiceVersion check: OLM creates it when the CSV installs"})
			continue
		} else if err != nil {
			return fmt.Errorf("doctor: reading %s: %w", obj, err)
		}
		d.add(deploymentCheck(dep))
		sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil {
			continue
		}
		var pods corev1.PodList
		if err := d.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return fmt.Errorf("doctor: listing pods of %s: %w", obj, err)
		}
		d.add(podsCheck(dep, pods.Items))
	}
	return nil
}

func deploymentCheck(dep *appsv1.Deployment) Check {
	c := Check{Check: CheckDeployment, Object: "deployment/" + dep.Name}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	for _, cond := range dep.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && dep.Status.AvailableReplicas >= want {
			c.Severity, c.Message = Pass, fmt.Sprintf("Available, %d/%d replicas ready", dep.Status.ReadyReplicas, want)
			return c
		}
		if cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse {
			c.Severity, c.Message = Fail, "not progressing: "+cond.Message
			c.Fix = "kubectl -n " + dep.Namespace + " describe deployment " + dep.Name
			return c
		}
	}
	c.Severity = Fail
	c.Message = fmt.Sprintf("not Available: %d/%d replicas ready", dep.Status.ReadyReplicas, want)
	c.Fix = "see the pods check; kubectl -n " + dep.Namespace + " describe deployment " + dep.Name
	return c
}

func podsCheck(dep *appsv1.Deployment, pods []corev1.Pod) Check {
	c := Check{Check: CheckPods, Object: "deployment/" + dep.Name}
	if len(pods) == 0 {
		c.Severity, c.Message, c.Fix = Fail, "no pods", "kubectl -n "+dep.Namespace+" get events: quota, scheduling or admission may refuse them"
		return c
	}
	var problems []string
	restarts := int32(0)
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		described := podhealth.Describe(&p)
		for _, pr := range described {
			problems = append(problems, "pod "+p.Name+": "+pr.Message)
		}
		if len(described) == 0 && p.Status.Phase != corev1.PodRunning {
			problems = append(problems, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase))
		} else if len(described) == 0 && !podhealth.Ready(&p) {
			problems = append(problems, fmt.Sprintf("pod %s is not Ready", p.Name))
		}
	}
	switch {
	case len(problems) > 0:
		c.Severity, c.Message = Fail, strings.Join(problems, "; ")
		c.Fix = "kubectl -n " + dep.Namespace + " logs deployment/" + dep.Name + " (CrashLoopBackOff) or describe the pod (image pull, scheduling)"
	case restarts > 0:
		c.Severity, c.Message = Warn, fmt.Sprintf("%d pods Running and Ready, %d restarts", len(pods), restarts)
		c.Fix = "kubectl -n " + dep.Namespace + " logs deployment/" + dep.Name + " --previous"
	default:
		c.Severity, c.Message = Pass, fmt.Sprintf("%d pods Running and Ready", len(pods))
	}
	return c
}

// crChecks lists the custom resources of crd and reports their last
// reconcile, as their conditions say.
func (d *doctor) crChecks(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := crd.Spec.Versions[0].Name
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind + "List"}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk)
	namespaces := d.crNamespaces(crd)
	where := "any namespace"
	if namespaces[0] != "" {
		where = "namespace " + strings.Join(namespaces, ", ")
	}
	for _, ns := range namespaces {
		part := &unstructured.UnstructuredList{}
		part.SetGroupVersionKind(gvk)
		if err := d.c.List(ctx, part, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("doctor: listing %s: %w", crd.Spec.Names.Plural, err)
		}
		list.Items = append(list.Items, part.Items...)
	}
	kind := crd.Spec.Names.Kind
	if len(list.Items) == 0 {
		d.add(Check{Check: CheckCR, Severity: Pass, Message: fmt.Sprintf("no %s in %s", kind, where)})
		return nil
	}
	for i, cr := range list.Items {
		if i == maxCRs {
			d.add(Check{Check: CheckCR, Severity: Warn, Message: fmt.Sprintf("%d more %s not examined", len(list.Items)-maxCRs, kind)})
			break
		}
		d.add(crCheck(&cr))
	}
	return nil
}

// crNamespaces are where custom resources of crd are looked for: the
// namespaces the operator watches (its OperatorGroup's, or the ones asked
// for), else the operator's namespace; "" alone means all namespaces.
func (d *doctor) crNamespaces(crd *apiextensionsv1.CustomResourceDefinition) []string {
	switch {
	case crd.Spec.Scope != apiextensionsv1.NamespaceScoped:
		return []string{""}
	case len(d.opts.WatchNamespaces) > 0:
		if slices.Contains(d.opts.WatchNamespaces, "") {
			return []string{""}
		}
		return slices.Sorted(slices.Values(d.opts.WatchNamespaces))
	}
	return []string{d.opts.Namespace}
}

// crCheck reads the conditions the Helm operator writes.
func crCheck(cr *unstructured.Unstructured) Check {
	obj := strings.ToLower(cr.GetKind()) + "/" + cr.GetName()
	if cr.GetNamespace() != "" {
		obj = cr.GetNamespace() + "/" + obj
	}
	c := Check{Check: CheckCR, Object: obj}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	byType := map[string]map[string]any{}
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok {
			t, _ := m["type"].(string)
			byType[t] = m
		}
	}
	is := func(t string) (bool, string) {
		m := byType[t]
		if m == nil || m["status"] != "True" {
			return false, ""
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return true, strings.TrimSpace(reason + ": " + msg)
	}
	if ok, msg := is(reconciler.TypeIrreconcilable); ok {
		c.Severity, c.Message = Fail, "Irreconcilable: "+msg
		c.Fix = "fix the spec (it violates the chart's values schema, or cannot be turned into values)"
		return c
	}
	if ok, msg := is(reconciler.TypeReleaseFailed); ok {
		c.Severity, c.Message = Fail, "ReleaseFailed: "+msg
		c.Fix = "fix what Helm reports (a template error, a forbidden or invalid object); the operator retries"
		return c
	}
	if ok, msg := is(reconciler.TypeDeployed); ok {
		if m := byType[reconciler.TypeReady]; m != nil && m["status"] != "True" {
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			c.Severity, c.Message = Warn, strings.TrimSpace("Deployed, not Ready: "+reason+" "+msg)
			c.Fix = "kubectl get the release's objects: a Deployment without available replicas, a pending PVC"
			return c
		}
		c.Severity, c.Message = Pass, "Deployed: "+msg
		return c
	}
	if len(byType) == 0 {
		c.Severity, c.Message = Warn, "no status conditions: the operator has not reconciled it"
		c.Fix = "is the operator running and watching namespace " + cmp.Or(cr.GetNamespace(), "(cluster)") + "? see the Deployment checks"
		return c
	}
	var types []string
	for t := range byType {
		types = append(types, t)
	}
	slices.Sort(types)
	c.Severity, c.Message = Warn, "not Deployed yet (conditions "+strings.Join(types, ", ")+")"
	return c
}

// chartChecks derives, for each watch's chart, the permissions it needs and
// checks them as the operator's ServiceAccount; and reports removed and
// deprecated APIs for the cluster's version.
func (d *doctor) chartChecks(ctx context.Context, ws []watches.Watch) error {
	var results []*rbac.Result
	for _, w := range ws {
		if d.opts.Kind != "" && !matchesKind(d.opts.Kind, w) {
			continue
		}
		resource := strings.ToLower(w.Kind) + "s"
		for _, crd := range d.crds {
			if crd.Spec.Group == w.Group && crd.Spec.Names.Kind == w.Kind {
				resource = crd.Spec.Names.Plural
			}
		}
		res, err := rbac.Derive(rbac.Options{
			Chart: &chart.Chart{Path: w.ChartPath, Helm: w.LoadedChart}, Owner: rbac.Owner{Group: w.Group, Resource: resource},
			WatchNamespace: d.opts.Namespace, KubeVersion: d.opts.KubeVersion, Config: d.opts.Config,
		})
		if err != nil {
			d.add(Check{Check: CheckRBAC, Severity: Fail, Object: w.Chart, Message: err.Error(), Fix: "fix the chart so that it renders: helm template " + w.ChartPath})
			continue
		}
		results = append(results, res)
	}
	for _, res := range results {
		for _, p := range res.Errors {
			d.add(Check{Check: CheckRemovedAPIs, Severity: Fail, Object: p.Template, Message: p.Message, Fix: "change the apiVersion in " + cmp.Or(p.Template, "the chart") + " to the replacement named"})
		}
		for _, p := range res.Warnings {
			d.add(Check{Check: CheckDeprecatedAPIs, Severity: Warn, Object: p.Template, Message: p.Message, Fix: "see the message; chartpilot generate re-derives RBAC after a chart change"})
		}
		if len(res.Errors) == 0 {
			d.add(Check{Check: CheckRemovedAPIs, Severity: Pass, Message: fmt.Sprintf("the chart renders %d kinds, none removed in Kubernetes %s", len(res.Kinds), d.opts.KubeVersion)})
		}
	}
	if d.opts.ServiceAccount == "" {
		if len(results) > 0 {
			d.add(Check{Check: CheckRBAC, Severity: Warn, Message: "not checked: the operator's ServiceAccount is unknown", Fix: "pass --service-account NAMESPACE/NAME or --package"})
		}
		return nil
	}
	return d.rbacChecks(ctx, rbac.Merge(results...))
}

func matchesKind(kind string, w watches.Watch) bool {
	gk := schema.ParseGroupKind(kind)
	return gk.Group == w.Group && (strings.EqualFold(gk.Kind, w.Kind) || strings.EqualFold(gk.Kind, strings.ToLower(w.Kind)+"s"))
}

// probe is one permission to check: a verb on a resource (with its
// subresource, as in a rule) in a namespace ("" for cluster-wide), for the
// rule at index rule.
type probe struct {
	rule                       int
	namespace, group, resource string
	verb, name                 string
	allowed                    bool
}

// reviewConcurrency bounds the SubjectAccessReviews in flight.
const reviewConcurrency = 8

// rbacChecks asks the API server, with SubjectAccessReviews, whether the
// ServiceAccount may do every verb of every rule, and names each missing rule.
func (d *doctor) rbacChecks(ctx context.Context, res *rbac.Result) error {
	saNS, sa, ok := strings.Cut(d.opts.ServiceAccount, "/")
	if !ok || saNS == "" || sa == "" {
		d.add(Check{Check: CheckRBAC, Severity: Fail, Message: fmt.Sprintf("service account %q is not NAMESPACE/NAME", d.opts.ServiceAccount)})
		return nil
	}
	user := "system:serviceaccount:" + saNS + ":" + sa
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"}
	// An OperatorGroup for all namespaces lists "": OLM then grants the
	// namespaced rules cluster-wide, which is what an empty namespace asks.
	namespaces := d.opts.WatchNamespaces
	if len(namespaces) == 0 {
		namespaces = []string{cmp.Or(d.opts.Namespace, saNS)}
	}
	var probes []*probe
	for i, rule := range res.Rules {
		scopes := []string{""}
		if rule.Namespaced {
			scopes = namespaces
		}
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, ns := range scopes {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					for _, verb := range rule.Verbs {
						for _, name := range names {
							probes = append(probes, &probe{rule: i, namespace: ns, group: g, resource: r, verb: verb, name: name})
						}
					}
				}
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(reviewConcurrency)
	for _, p := range probes {
		g.Go(func() error {
			var err error
			p.allowed, err = d.review(gctx, user, groups, p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}

	// One failed check per rule, namespace, group and resource, listing its
	// missing verbs, in the order of the rules.
	type key struct {
		rule                       int
		namespace, group, resource string
	}
	missing := map[key][]string{}
	var order []key
	for _, p := range probes {
		if p.allowed {
			continue
		}
		k := key{p.rule, p.namespace, p.group, p.resource}
		if _, seen := missing[k]; !seen {
			order = append(order, k)
		}
		if !slices.Contains(missing[k], p.verb) {
			missing[k] = append(missing[k], p.verb)
		}
	}
	for _, k := range order {
		rule := res.Rules[k.rule]
		where, role := "cluster-wide", "ClusterRole"
		if k.namespace != "" {
			where, role = "in the namespace "+k.namespace, "Role in "+k.namespace
		}
		data, _ := json.Marshal(rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: missing[k], ResourceNames: rule.ResourceNames})
		groupName := k.group
		if groupName == "" {
			groupName = `""`
		}
		d.add(Check{Check: CheckRBAC, Severity: Fail, Object: "serviceaccount/" + sa,
			Message: fmt.Sprintf("%s is forbidden: %s cannot %s resource %q in API group %s %s (needed for: %s)",
				k.resource, user, strings.Join(missing[k], ", "), k.resource, groupName, where, strings.Join(rule.Reasons, "; ")),
			Fix: "add to the operator's " + role + ": " + flowRule(data) + " (chartpilot generate writes it to config/rbac/role.yaml; rebuild the bundle)"})
	}
	if len(order) == 0 {
		d.add(Check{Check: CheckRBAC, Severity: Pass, Object: "serviceaccount/" + sa, Message: fmt.Sprintf("all %d permissions the chart needs are granted (%d rules)", len(probes), len(res.Rules))})
	}
	return nil
}

// flowRule turns a PolicyRule's JSON into the YAML flow style of role.yaml.
func flowRule(data []byte) string {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return string(data)
	}
	var parts []string
	for _, k := range []string{"apiGroups", "resources", "resourceNames", "verbs"} {
		v, ok := m[k].([]any)
		if !ok {
			continue
		}
		var items []string
		for _, x := range v {
			s := fmt.Sprint(x)
			if s == "" {
				s = `""`
			}
			items = append(items, s)
		}
		parts = append(parts, k+": ["+strings.Join(items, ", ")+"]")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (d *doctor) review(ctx context.Context, user string, groups []string, p *probe) (bool, error) {
	resource, sub, _ := strings.Cut(p.resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: p.namespace, Verb: p.verb, Group: p.group, Resource: resource, Subresource: sub, Name: p.name,
		},
	}}
	if err := d.c.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("doctor: SubjectAccessReview for %s %s: %w", p.verb, p.resource, err)
	}
	return sar.Status.Allowed, nil
}
