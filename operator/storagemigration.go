package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/operator/storageversion"
)

// storageMigration runs once the operator leads: for each CRD of its kinds
// whose status.storedVersions holds more than the storage version (a
// release added a version), it rewrites every CR in the storage version
// and trims storedVersions (package storageversion), so that a later
// release may drop the old version.
//
// Only an operator that watches all namespaces does: it then holds list
// and update on its CRs everywhere, and no CR can be left in an old
// version where it does not look. One that watches some namespaces says
// what to run instead (chartpilot olm migrate, as the cluster admin).
// Reading the CRD and updating its status are granted by name
// (storageversion.CRDRules); an operator without them skips, saying so.
// Nothing here stops the operator: a failed migration is logged.
type storageMigration struct {
	cfg    *rest.Config
	mapper meta.RESTMapper
	kinds  []schema.GroupVersionKind
	// namespaces the operator watches; empty for all.
	namespaces []string
	log        logr.Logger
}

// Start migrates each kind's CRD in turn, then returns.
func (m *storageMigration) Start(ctx context.Context) error {
	ext, err := apiextensionsclient.NewForConfig(m.cfg)
	if err != nil {
		m.log.Error(err, "storage migration skipped")
		return nil
	}
	kube, err := kubernetes.NewForConfig(m.cfg)
	if err != nil {
		m.log.Error(err, "storage migration skipped")
		return nil
	}
	migrator, err := storageversion.New(m.cfg, storageversion.Options{})
	if err != nil {
		m.log.Error(err, "storage migration skipped")
		return nil
	}
	for _, gvk := range m.kinds {
		if ctx.Err() != nil {
			return nil
		}
		mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			m.log.Error(err, "storage migration: cannot map the kind", "kind", gvk)
			continue
		}
		name := mapping.Resource.Resource + "." + gvk.Group
		log := m.log.WithValues("crd", name)
		// Asked first, so that an operator without the rules (a CRD of
		// one version) sends no request it is refused.
		if ok, err := mayReadCRD(ctx, kube, name); err != nil || !ok {
			log.V(1).Info("may not read the CRD: its storage is not migrated here (chartpilot olm migrate does it)", "error", err)
			continue
		}
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			log.Error(err, "storage migration: reading the CRD")
			continue
		}
		storage := storageversion.StorageVersion(crd)
		if !storageversion.Needed(crd.Status.StoredVersions, storage) {
			continue
		}
		if len(m.namespaces) > 0 {
			log.Info(fmt.Sprintf("CRs may still be stored in versions %v besides %s, but this operator watches namespaces %s only and cannot migrate those elsewhere: run `chartpilot olm migrate %s` as the cluster admin before a release drops an old version",
				crd.Status.StoredVersions, storage, strings.Join(m.namespaces, ", "), name))
			continue
		}
		res, err := migrator.Migrate(ctx, name)
		if err != nil {
			log.Error(err, "storage migration failed: the old versions stay in status.storedVersions")
			continue
		}
		log.Info("storage migrated: "+res.String(), "rewritten", res.Rewritten, "storageVersion", res.StorageVersion)
	}
	return nil
}

// mayReadCRD asks the API server whether the operator may get the CRD
// (storageversion.CRDRules grant it by name).
func mayReadCRD(ctx context.Context, kube kubernetes.Interface, name string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions", Name: name, Verb: "get"},
	}}
	res, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
