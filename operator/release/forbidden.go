package release

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ErrRulesNotHeld: the release's Roles or ClusterRoles grant rules the
// operator does not hold, which Kubernetes refuses to let it grant
// (escalation prevention). The custom resource's values shape those
// rules (a resource name built from the release's name, rules given in
// values): the operator's RBAC was derived without them.
var ErrRulesNotHeld = errors.New("the chart's roles grant rules the operator does not hold")

// maxAccessReviews bounds the reviews one explanation asks for.
const maxAccessReviews = 200

// explainRulesNotHeld turns the API server's refusal of a Role or
// ClusterRole of the release into ErrRulesNotHeld naming each rule of the
// release's roles the operator does not hold (asked of the API server, one
// SelfSubjectAccessReview per verb and resource), and what to do. Other
// errors, and a refusal whose rules it cannot tell, are returned as they are.
func (c *Client) explainRulesNotHeld(ctx context.Context, namespace, manifest string, err error) error {
	if !refusedRole(err) || manifest == "" {
		return err
	}
	missing, rerr := c.rulesNotHeld(ctx, namespace, manifest)
	if rerr != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("%w: %s; these values shape the chart's RBAC: derive the operator's with them (chartpilot generate --values FILE, FILE holding this custom resource's spec), then publish the new bundle; or change the values: %w",
		ErrRulesNotHeld, strings.Join(missing, "; "), err)
}

// refusedRole says whether err holds the API server's Forbidden for a Role
// or ClusterRole, also inside Helm's aggregate errors.
func refusedRole(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return s.Reason == metav1.StatusReasonForbidden && s.Details != nil &&
			s.Details.Group == rbacv1.GroupName && (s.Details.Kind == "roles" || s.Details.Kind == "clusterroles")
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		return slices.ContainsFunc(agg.Errors(), refusedRole)
	}
	return false
}

// rulesNotHeld lists, for each Role and ClusterRole of manifest (a
// release's in namespace), the rules of it the operator may not perform,
// each as the rule it lacks.
func (c *Client) rulesNotHeld(ctx context.Context, namespace, manifest string) ([]string, error) {
	roles, err := manifestRoles(manifest, namespace)
	if err != nil {
		return nil, err
	}
	reviews := 0
	var out []string
	for _, r := range roles {
		for _, rule := range r.rules {
			for _, attrs := range ruleAttributes(rule, r.namespace) {
				if reviews++; reviews > maxAccessReviews {
					return out, nil
				}
				allowed, err := c.allowed(ctx, attrs)
				if err != nil {
					return nil, err
				}
				if !allowed {
					out = append(out, fmt.Sprintf("%s %s: %s", r.kind, r.name, describeAttributes(attrs)))
				}
			}
		}
	}
	return out, nil
}

// renderedRole is a Role or ClusterRole of a manifest.
type renderedRole struct {
	kind, name, namespace string
	rules                 []rbacv1.PolicyRule
}

// manifestRoles are the Roles (in namespace unless they name one) and
// ClusterRoles of manifest.
func manifestRoles(manifest, namespace string) ([]renderedRole, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifest), 4096)
	var out []renderedRole
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if obj.GroupVersionKind().Group != rbacv1.GroupName || (obj.GetKind() != "Role" && obj.GetKind() != "ClusterRole") {
			continue
		}
		var role rbacv1.ClusterRole // a Role's fields are a subset
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			return nil, err
		}
		r := renderedRole{kind: obj.GetKind(), name: obj.GetName(), rules: role.Rules}
		if r.kind == "Role" {
			r.namespace = cmp.Or(obj.GetNamespace(), namespace)
		}
		out = append(out, r)
	}
}

// ruleAttributes are the requests a rule allows, one per verb and
// resource (and resource name, and URL).
func ruleAttributes(r rbacv1.PolicyRule, namespace string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	names := r.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			resource, sub, _ := strings.Cut(res, "/")
			for _, v := range r.Verbs {
				for _, n := range names {
					out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Group: g, Resource: resource, Subresource: sub, Verb: v, Name: n})
				}
			}
		}
	}
	return out
}

func (c *Client) allowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, error) {
	review, err := c.clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// describeAttributes is a request as the rule that allows it.
func describeAttributes(a authorizationv1.ResourceAttributes) string {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	s := fmt.Sprintf("{apiGroups: [%q], resources: [%q], verbs: [%s]", a.Group, resource, a.Verb)
	if a.Name != "" {
		s += fmt.Sprintf(", resourceNames: [%q]", a.Name)
	}
	if a.Namespace != "" {
		return s + "} in namespace " + a.Namespace
	}
	return s + "}"
}
