package operator

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// mayWatchPods says whether the operator may list and watch pods in every
// namespace it watches: the health of a release's workloads comes from their
// pods in the operator's cache, and an informer the operator may not run
// would wait forever for its first list. Projects scaffolded by chartpilot
// grant it when a chart has workloads; an older role may not.
func mayWatchPods(ctx context.Context, cfg *rest.Config, namespaces []string) (bool, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"},
			}}
			res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return false, fmt.Errorf("asking whether the operator may %s pods in namespace %q: %w", verb, ns, err)
			}
			if !res.Status.Allowed {
				return false, nil
			}
		}
	}
	return true, nil
}
