package release

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A reconcile reads a release's records and a workload's pods from
// informer caches. Listed by namespace and label selector, a cache matches
// every object of the namespace, so with all CRs in one namespace each
// reconcile cost as much as there were releases (at 1000 CRs that was a
// third of what the operator allocated). These indexes make each read cost
// what it finds.

// podLabelField indexes pods by each of their labels, as key=value.
const podLabelField = "chartpilot.pod.label"

// IndexPods indexes the pods of the cache that WithPodReader's reader reads
// by their labels; call it before the cache starts.
func IndexPods(ctx context.Context, indexer client.FieldIndexer) error {
	pod := &unstructured.Unstructured{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	err := indexer.IndexField(ctx, pod, podLabelField, func(o client.Object) []string {
		out := make([]string, 0, len(o.GetLabels()))
		for k, v := range o.GetLabels() {
			out = append(out, k+"="+v)
		}
		return out
	})
	if err != nil {
		return fmt.Errorf("indexing pods by label: %w", err)
	}
	return nil
}

// podsMatching lists the pods of namespace that sel selects: those of
// sel's first equality requirement from the index, then filtered by all
// of sel. A selector without one (only set-based requirements) lists the
// namespace's pods.
func podsMatching(ctx context.Context, r client.Reader, namespace string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	pods := &unstructured.UnstructuredList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}}
	if key, ok := indexKey(sel); ok {
		opts = []client.ListOption{client.InNamespace(namespace), client.MatchingFields{podLabelField: key}}
	}
	if err := r.List(ctx, pods, opts...); err != nil {
		return nil, err
	}
	out := pods.Items[:0]
	for _, p := range pods.Items {
		if sel.Matches(labels.Set(p.GetLabels())) {
			out = append(out, p)
		}
	}
	return out, nil
}

// indexKey is the key=value of sel's first equality requirement.
func indexKey(sel labels.Selector) (string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if v := r.Values(); v.Len() == 1 {
				return r.Key() + "=" + v.UnsortedList()[0], true
			}
		}
	}
	return "", false
}
