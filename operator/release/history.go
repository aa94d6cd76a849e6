package release

import (
	"context"
	"fmt"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WithRecordIndex lets Observe read a release's history from r (an informer
// cache of Secret metadata) instead of listing and decoding every revision
// from the API server each time: a reconcile of a release in sync then costs
// no request and no decoding. Every record this client writes carries
// recordLabels, and r must hold the metadata of the Secrets so labelled.
//
// The index is only trusted when it shows everything this process wrote
// (read-your-writes) and a deployed revision; otherwise, for releases written
// by Helm or operator-sdk before, Observe asks the API server.
func WithRecordIndex(r client.Reader, recordLabels map[string]string) ClientOption {
	return func(c *Client) {
		c.records = r
		c.recordLabels = recordLabels
	}
}

var secretListGVK = corev1.SchemeGroupVersion.WithKind("SecretList")

// slimRelease keeps what Observe and its callers read of a revision: not the
// chart's templates and files, nor the values, which make up most of a
// release's memory.
func slimRelease(r *helmrelease.Release) *helmrelease.Release {
	s := &helmrelease.Release{
		Name:      r.Name,
		Namespace: r.Namespace,
		Version:   r.Version,
		Info:      r.Info,
		Manifest:  r.Manifest,
		Labels:    r.Labels,
	}
	if r.Chart != nil {
		s.Chart = &chart.Chart{Metadata: r.Chart.Metadata}
	}
	return s
}

// recordCache holds the slim revisions read through the index, by release and
// record key, with the resourceVersion they were read at.
type recordCache struct {
	mu       sync.Mutex
	releases map[types.NamespacedName]map[string]cachedRecord
}

type cachedRecord struct {
	resourceVersion string
	release         *helmrelease.Release
}

func (rc *recordCache) get(rel types.NamespacedName, key, resourceVersion string) *helmrelease.Release {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r, ok := rc.releases[rel][key]; ok && r.resourceVersion == resourceVersion {
		return r.release
	}
	return nil
}

// keep replaces what is cached for the release with records.
func (rc *recordCache) keep(rel types.NamespacedName, records map[string]cachedRecord) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.releases == nil {
		rc.releases = map[types.NamespacedName]map[string]cachedRecord{}
	}
	rc.releases[rel] = records
}

func (rc *recordCache) forget(rel types.NamespacedName) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.releases, rel)
}

// history returns the revisions of a release, from the index when it can be
// trusted, from the API server otherwise.
func (c *Client) history(ctx context.Context, namespace, name string) ([]*helmrelease.Release, error) {
	cfg := c.actionConfig(namespace)
	if c.records == nil {
		return cfg.Releases.History(name)
	}
	d := c.driver(namespace)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretListGVK)
	sel := client.MatchingLabels{"owner": "helm", "name": name}
	for k, v := range c.recordLabels {
		sel[k] = v
	}
	if err := c.records.List(ctx, list, client.InNamespace(namespace), sel); err != nil {
		c.log("listing the records of release %s/%s from the index: %v", namespace, name, err)
		return d.history(name)
	}
	if !d.writes.reflectedBy(name, list.Items) {
		return d.history(name)
	}
	rel := types.NamespacedName{Namespace: namespace, Name: name}
	kept := make(map[string]cachedRecord, len(list.Items))
	out := make([]*helmrelease.Release, 0, len(list.Items))
	deployed := false
	for _, m := range list.Items {
		r := c.cache.get(rel, m.Name, m.ResourceVersion)
		rv := m.ResourceVersion
		if r == nil {
			full, secretRV, err := d.getRecord(ctx, m.Name)
			if err != nil {
				return nil, fmt.Errorf("reading record %s: %w", m.Name, err)
			}
			r, rv = slimRelease(full), secretRV
		}
		kept[m.Name] = cachedRecord{resourceVersion: rv, release: r}
		out = append(out, r)
		deployed = deployed || (r.Info != nil && r.Info.Status == helmrelease.StatusDeployed)
	}
	c.cache.keep(rel, kept)
	if !deployed {
		// Nothing deployed in the index: the release is new, or its deployed
		// revision was written by another tool without our labels.
		return d.history(name)
	}
	return out, nil
}

// writeLog remembers, per release, the records this process wrote (by key,
// with the resourceVersion written, "" for deleted) until the index shows
// them.
type writeLog struct {
	mu     sync.Mutex
	byName map[string]map[string]string
}

func (w *writeLog) wrote(name, key, resourceVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName == nil {
		w.byName = map[string]map[string]string{}
	}
	if w.byName[name] == nil {
		w.byName[name] = map[string]string{}
	}
	w.byName[name][key] = resourceVersion
}

// saw replaces what is expected of a release's records by the API server's
// answer, the truth the index must catch up with.
func (w *writeLog) saw(name string, records map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName == nil {
		w.byName = map[string]map[string]string{}
	}
	for key := range w.byName[name] {
		if _, ok := records[key]; !ok {
			records[key] = ""
		}
	}
	w.byName[name] = records
}

// reflectedBy reports whether the index's records of a release include every
// expected write, and forgets the expectations once they do.
func (w *writeLog) reflectedBy(name string, index []metav1.PartialObjectMetadata) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := w.byName[name]
	if len(want) == 0 {
		return true
	}
	have := make(map[string]string, len(index))
	for _, m := range index {
		have[m.Name] = m.ResourceVersion
	}
	for key, rv := range want {
		got, ok := have[key]
		if rv == "" && ok || rv != "" && got != rv {
			return false
		}
	}
	delete(w.byName, name)
	return true
}
