package release

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// WithRecordIndex lets Observe read a release's history from r (an informer
// cache of Secret metadata, a RecordIndex) instead of listing and decoding
// every revision from the API server each time: a reconcile of a release in
// sync then costs no request and no decoding, and the install of a new
// release no LIST. Every record this client writes carries recordLabels; r
// must hold the metadata of every Helm release record of the namespaces
// (label owner=helm), other tools' too, so that a name it shows no record
// of has none.
//
// What this process wrote is seen at once, before the index shows it
// (read-your-writes). When the index shows records of the release without
// recordLabels (written by Helm or operator-sdk), or none deployed, Observe
// asks the API server.
//
// r lists records by release name through the index NewRecordIndex makes.
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
		Manifest:  r.Manifest,
		Labels:    maps.Clone(r.Labels),
	}
	// Copied: Helm changes the status of the release it is writing.
	if r.Info != nil {
		info := *r.Info
		s.Info = &info
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

// forget drops what is kept in memory about a release that is gone.
func (c *Client) forget(rel types.NamespacedName) {
	c.cache.forget(rel)
	c.created.forget(rel)
	c.builtMu.Lock()
	delete(c.built, rel)
	c.builtMu.Unlock()
}

// history returns the revisions of a release: the index's, overlaid with
// what this process wrote that the index does not show yet. The API server
// is asked only when the index shows records of another tool (without our
// labels) or when that view has records but none deployed.
func (c *Client) history(ctx context.Context, namespace, name string) ([]*helmrelease.Release, error) {
	cfg := c.actionConfig(namespace)
	if c.records == nil {
		all, err := cfg.Releases.History(name)
		if err != nil {
			return nil, err
		}
		out := make([]*helmrelease.Release, 0, len(all))
		for _, r := range all {
			rel, err := asRelease(r)
			if err != nil {
				return nil, err
			}
			out = append(out, rel)
		}
		return out, nil
	}
	d := c.driver(namespace)
	view, foreign, err := c.indexed(ctx, namespace, name)
	if err != nil {
		c.log("listing the records of release %s/%s from the index: %v", namespace, name, err)
		return d.query(labels.Set{"owner": "helm", "name": name})
	}
	if foreign {
		return d.query(labels.Set{"owner": "helm", "name": name})
	}
	for key, w := range d.writes.overlay(name, view) {
		if w.release == nil {
			delete(view, key)
		} else {
			view[key] = w
		}
	}
	rel := types.NamespacedName{Namespace: namespace, Name: name}
	out := make([]*helmrelease.Release, 0, len(view))
	deployed := false
	for key, r := range view {
		if r.release == nil {
			r.release = c.cache.get(rel, key, r.resourceVersion)
		}
		if r.release == nil {
			full, rv, err := d.getRecord(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("reading record %s: %w", key, err)
			}
			r = cachedRecord{resourceVersion: rv, release: slimRelease(full)}
		}
		view[key] = r
		out = append(out, r.release)
		deployed = deployed || (r.release.Info != nil && r.release.Info.Status == releasecommon.StatusDeployed)
	}
	c.cache.keep(rel, view)
	if len(out) == 0 {
		// The index holds every Helm record of the namespace: none of
		// this name means no release, which Helm's own check of the name
		// asks again right after (see absent).
		d.markAbsent(name)
		return nil, nil
	}
	if !deployed {
		return d.releaseRecords(name)
	}
	return out, nil
}

// indexed returns the records of a release the index shows, by key, and
// whether some of them were written by another tool (they lack our labels).
func (c *Client) indexed(ctx context.Context, namespace, name string) (map[string]cachedRecord, bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretListGVK)
	if err := c.records.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{recordNameField: name}); err != nil {
		return nil, false, err
	}
	view := make(map[string]cachedRecord, len(list.Items))
	for _, m := range list.Items {
		if !labels.SelectorFromSet(c.recordLabels).Matches(labels.Set(m.Labels)) {
			return nil, true, nil
		}
		view[m.Name] = cachedRecord{resourceVersion: m.ResourceVersion}
	}
	return view, false, nil
}

// writeLog remembers, per release and record key, what this process wrote
// (the slim release and the resourceVersion written; no release for a
// delete) until the record index shows it.
type writeLog struct {
	mu     sync.Mutex
	byName map[string]map[string]cachedRecord
}

func (w *writeLog) wrote(name, key string, r cachedRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName == nil {
		w.byName = map[string]map[string]cachedRecord{}
	}
	if w.byName[name] == nil {
		w.byName[name] = map[string]cachedRecord{}
	}
	w.byName[name][key] = r
}

// overlay returns every write of a release this process remembers, to lay
// over the index's records (key -> resourceVersion), and forgets those the
// index shows already: their content is what was written, so no read is
// needed for them either.
func (w *writeLog) overlay(name string, index map[string]cachedRecord) map[string]cachedRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]cachedRecord{}
	for key, r := range w.byName[name] {
		out[key] = r
		got, ok := index[key]
		if ok && got.resourceVersion == r.resourceVersion || !ok && r.release == nil {
			delete(w.byName[name], key)
		}
	}
	if len(w.byName[name]) == 0 {
		delete(w.byName, name)
	}
	return out
}

// Latest reads the newest revision of a release whole (chart, values and
// manifest) from Helm's storage, bypassing the index: what a backup keeps.
func (c *Client) Latest(ctx context.Context, namespace, name string) (*helmrelease.Release, error) {
	rels, err := c.driver(namespace).query(labels.Set{"owner": "helm", "name": name})
	if err != nil {
		return nil, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, driver.ErrReleaseNotFound)
	}
	latest := rels[0]
	for _, r := range rels[1:] {
		if r.Version > latest.Version {
			latest = r
		}
	}
	return latest, nil
}
