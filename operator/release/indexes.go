package release

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

// recordOwnerLabel is the label Helm puts on every release record, whoever
// wrote it (Helm, operator-sdk, this package).
var recordOwnerLabel = labels.Set{"owner": "helm"}

// recordNameField indexes the records of a RecordIndex by release name.
const recordNameField = "chartpilot.release.name"

// RecordIndex is an informer cache of the metadata of every Helm release
// record (Secrets labelled owner=helm) in some namespaces: this process's
// and those of other tools. Holding them all is what lets an index that
// shows no record of a name prove that no release of that name exists,
// without a LIST of the namespace's Secrets per install. A GET of the
// first revision's record would not prove it: Helm prunes the oldest
// revisions past its history limit, so a release upgraded often by
// another tool (operator-sdk, the helm CLI) has no revision 1.
type RecordIndex struct {
	cache.Cache
}

// NewRecordIndex returns the index of the records in namespaces (all when
// empty). It starts with the first List, or with a manager it was added to
// (GetCache: with the manager's caches, before leader election, so that a
// standby holds it warm).
func NewRecordIndex(cfg *rest.Config, namespaces []string) (*RecordIndex, error) {
	obj := recordMetadata()
	opts := cache.Options{
		ByObject:         map[client.Object]cache.ByObject{obj: {Label: labels.SelectorFromSet(recordOwnerLabel)}},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the index of release records: %w", err)
	}
	// Known before the start, so that it syncs with the cache rather than
	// at the first reconcile.
	if _, err := c.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("creating the index of release records: %w", err)
	}
	err = c.IndexField(context.Background(), obj, recordNameField, func(o client.Object) []string {
		return []string{o.GetLabels()["name"]}
	})
	if err != nil {
		return nil, fmt.Errorf("indexing release records by name: %w", err)
	}
	return &RecordIndex{Cache: c}, nil
}

// GetCache makes a manager start the index with its own caches.
func (i *RecordIndex) GetCache() cache.Cache { return i.Cache }

func recordMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(secretListGVK.GroupVersion().WithKind("Secret"))
	return m
}
