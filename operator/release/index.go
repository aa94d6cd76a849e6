package release

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
