package storageversion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// FieldManager is the field manager of the migration's writes.
const FieldManager = "chartpilot-storage-migration"

// DefaultPageSize is how many CRs a list request reads at once.
const DefaultPageSize = 500

// maxAttempts bounds the restarts of a migration whose CRD changed under
// it (a conflict on its status update).
const maxAttempts = 5

// Options configure Migrate.
type Options struct {
	// DryRun lists what would be rewritten and trimmed and writes nothing.
	DryRun bool
	// PageSize is the list page size (default DefaultPageSize).
	PageSize int64
	// Out, when set, receives a line per CR that could not be rewritten.
	Out io.Writer
}

// Result is what Migrate did for one CRD.
type Result struct {
	CRD string `json:"crd"`
	// StorageVersion is the CRD's storage version.
	StorageVersion string `json:"storageVersion"`
	// StoredVersions are the CRD's status.storedVersions before.
	StoredVersions []string `json:"storedVersions"`
	// Rewritten counts the CRs written back (or, with DryRun, to write).
	Rewritten int `json:"rewritten"`
	// Trimmed is true when storedVersions was set to the storage version
	// alone (with DryRun: would be).
	Trimmed bool `json:"trimmed"`
	// DryRun: nothing was written.
	DryRun bool `json:"dryRun,omitempty"`
}

func (r Result) String() string {
	switch {
	case !Needed(r.StoredVersions, r.StorageVersion):
		return fmt.Sprintf("%s: stored in %s only, nothing to migrate", r.CRD, r.StorageVersion)
	case r.DryRun:
		return fmt.Sprintf("%s: would rewrite %d CR(s) in %s and trim storedVersions %v -> [%s] (dry run)", r.CRD, r.Rewritten, r.StorageVersion, r.StoredVersions, r.StorageVersion)
	case r.Trimmed:
		return fmt.Sprintf("%s: %d CR(s) rewritten in %s; storedVersions %v -> [%s]", r.CRD, r.Rewritten, r.StorageVersion, r.StoredVersions, r.StorageVersion)
	}
	return fmt.Sprintf("%s: %d CR(s) rewritten in %s; storedVersions %v kept", r.CRD, r.Rewritten, r.StorageVersion, r.StoredVersions)
}

// ErrNoStorageVersion is returned for a CRD none of whose versions is the
// storage one (the API server never accepts such a CRD; a bad fake might).
var ErrNoStorageVersion = errors.New("no storage version")

// Needed says whether objects may be stored in another version than the
// storage one.
func Needed(stored []string, storage string) bool {
	return slices.ContainsFunc(stored, func(v string) bool { return v != storage })
}

// StorageVersion is the name of crd's storage version, "" if none.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Migrator migrates CRDs through one cluster's clients.
type Migrator struct {
	ext  apiextensionsclient.Interface
	dyn  dynamic.Interface
	opts Options
}

// New returns a Migrator acting with cfg's identity. It needs get on the
// CRDs and update on their status, and list and update on their CRs in
// every namespace.
func New(cfg *rest.Config, opts Options) (*Migrator, error) {
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	return &Migrator{ext: ext, dyn: dyn, opts: opts}, nil
}

// Migrate rewrites every CR of the CRD named name in its storage version,
// in all namespaces, then sets status.storedVersions to that version. A CR
// the API server refuses to write (it fails the schema) is named in the
// error, and storedVersions is then left as it is: some CRs may still be
// stored in an old version.
//
// A CR written by someone else between the list and its rewrite (a
// conflict) counts as migrated: that write encoded it in the storage
// version. The CRD's status is updated against the CRD as read before the
// CRs were listed: if its storage version changed meanwhile, the whole
// migration starts again.
func (m *Migrator) Migrate(ctx context.Context, name string) (*Result, error) {
	crds := m.ext.ApiextensionsV1().CustomResourceDefinitions()
	var res *Result
	for attempt := 0; attempt < maxAttempts; attempt++ {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading CRD %s: %w", name, err)
		}
		storage := StorageVersion(crd)
		if storage == "" {
			return nil, fmt.Errorf("CRD %s: %w", name, ErrNoStorageVersion)
		}
		res = &Result{CRD: name, StorageVersion: storage, StoredVersions: slices.Clone(crd.Status.StoredVersions), DryRun: m.opts.DryRun}
		if !Needed(crd.Status.StoredVersions, storage) {
			return res, nil
		}
		if res.Rewritten, err = m.rewrite(ctx, crd, storage); err != nil {
			return res, err
		}
		if m.opts.DryRun {
			res.Trimmed = true
			return res, nil
		}
		done, err := m.trim(ctx, crd, storage)
		if err != nil {
			return res, err
		}
		if done {
			res.Trimmed = true
			return res, nil
		}
	}
	return res, fmt.Errorf("CRD %s kept changing while its CRs were migrated (%d attempts)", name, maxAttempts)
}

// trim sets crd's storedVersions to storage. false means the CRD's spec
// changed since crd was read: the CRs must be migrated again.
func (m *Migrator) trim(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string) (bool, error) {
	crds := m.ext.ApiextensionsV1().CustomResourceDefinitions()
	for {
		want := crd.DeepCopy()
		want.Status.StoredVersions = []string{storage}
		_, err := crds.UpdateStatus(ctx, want, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			return true, nil
		}
		if !apierrors.IsConflict(err) {
			return false, fmt.Errorf("trimming status.storedVersions of CRD %s: %w", crd.Name, err)
		}
		// The API server updates the status (conditions) on its own: only
		// a change of the spec can have moved the storage version.
		cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		}
		if cur.Generation != crd.Generation || StorageVersion(cur) != storage {
			return false, nil
		}
		if !Needed(cur.Status.StoredVersions, storage) {
			return true, nil
		}
		crd = cur
	}
}

// rewrite writes back every CR of crd, listed in the storage version.
func (m *Migrator) rewrite(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string) (int, error) {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	var errs []error
	count := 0
	cont := ""
	for {
		list, err := m.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: m.opts.PageSize, Continue: cont})
		if apierrors.IsResourceExpired(err) {
			// The continue token expired: start over; rewriting twice is harmless.
			cont, count, errs = "", 0, nil
			continue
		}
		if err != nil {
			return count, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			ok, err := m.rewriteOne(ctx, gvr, namespaced, &list.Items[i])
			if err != nil {
				errs = append(errs, err)
				fmt.Fprintln(m.opts.Out, err)
			}
			if ok {
				count++
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	if len(errs) > 0 {
		return count, fmt.Errorf("%d CR(s) of %s could not be rewritten in %s, so status.storedVersions is kept: %w", len(errs), crd.Name, storage, errors.Join(errs...))
	}
	return count, nil
}

// rewriteOne writes obj back as it was read: the API server encodes it in
// the storage version. ok is false for a CR deleted meanwhile.
func (m *Migrator) rewriteOne(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured) (ok bool, err error) {
	var ri dynamic.ResourceInterface = m.dyn.Resource(gvr)
	if namespaced {
		ri = m.dyn.Resource(gvr).Namespace(obj.GetNamespace())
	}
	if m.opts.DryRun {
		return true, nil
	}
	_, err = ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case err == nil, apierrors.IsConflict(err):
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("%s %s: %w", gvr.GroupResource(), name(obj), err)
}

func name(obj *unstructured.Unstructured) string {
	return strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/")
}
