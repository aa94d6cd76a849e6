package scorecard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/internal/crdready"
)

// crdSet holds the bundle's CRDs for the cluster tests of one Run. Tests
// side by side share them: the first that needs a CRD applies it, the last
// one done deletes it if the scorecard created it. Each create or delete
// makes the API server rebuild its OpenAPI, so sharing also saves that.
// Every operation holds the set's lock, so that a test never sees a CRD
// half applied or being deleted.
type crdSet struct {
	cfg      *rest.Config
	waitTime time.Duration

	mu   sync.Mutex
	held map[string]*heldCRD
}

type heldCRD struct {
	refs int
	// created: the scorecard created it, and deletes it when done.
	created bool
	spec    apiextensionsv1.CustomResourceDefinitionSpec
}

func newCRDSet(cfg *rest.Config, waitTime time.Duration) *crdSet {
	return &crdSet{cfg: cfg, waitTime: waitTime, held: map[string]*heldCRD{}}
}

// acquire makes crd served as given (created, or updated if it exists with
// another spec), waits until it is established, and holds it until
// release; held says whether the caller must release it, even on an
// error. logf says what it did for the test's log.
func (s *crdSet) acquire(ctx context.Context, api apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, logf func(string, ...any)) (held bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[crd.Name]
	if h != nil && equality.Semantic.DeepEqual(h.spec, crd.Spec) {
		h.refs++
		logf("CRD %s already served as this bundle has it", crd.Name)
		return true, nil
	}
	created, err := applyCRD(ctx, api.ApiextensionsV1().CustomResourceDefinitions(), crd)
	if err != nil {
		return false, err
	}
	if created {
		logf("installed CRD %s", crd.Name)
	} else {
		logf("updated CRD %s", crd.Name)
	}
	if h == nil {
		h = &heldCRD{created: created}
		s.held[crd.Name] = h
	}
	h.refs++
	h.spec = *crd.Spec.DeepCopy()
	// The operator's REST mapper starts from discovery, which serves the
	// kind a moment after the CRD is Established.
	return true, crdready.Wait(ctx, s.cfg, []string{crd.Name}, crdready.Options{Timeout: s.waitTime})
}

// release lets go of a CRD acquire held; the last holder deletes a CRD the
// scorecard created and waits until it is gone, since the next test may
// create it again.
func (s *crdSet) release(ctx context.Context, api apiextensionsclient.Interface, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[name]
	if h == nil {
		return nil
	}
	if h.refs--; h.refs > 0 {
		return nil
	}
	delete(s.held, name)
	if !h.created {
		return nil
	}
	crds := api.ApiextensionsV1().CustomResourceDefinitions()
	if err := ignoreNotFound(crds.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, pollInterval, s.waitTime, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// applyCRD creates a CRD, or updates the one that exists; created tells
// which.
func applyCRD(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, crd *apiextensionsv1.CustomResourceDefinition) (created bool, err error) {
	want := crd.DeepCopy()
	want.ResourceVersion, want.Status = "", apiextensionsv1.CustomResourceDefinitionStatus{}
	_, err = api.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("installing CRD %s: %w", crd.Name, err)
	}
	err = retryConflict(ctx, func() error {
		cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := servesStoredVersions(want, cur); err != nil {
			return err
		}
		want.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, want, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("updating CRD %s: %w", crd.Name, err)
	}
	return false, nil
}

// servesStoredVersions checks that a new CRD still serves every version
// objects are stored in: dropping one loses the custom resources.
func servesStoredVersions(want, cur *apiextensionsv1.CustomResourceDefinition) error {
	for _, v := range cur.Status.StoredVersions {
		if !slices.ContainsFunc(want.Spec.Versions, func(w apiextensionsv1.CustomResourceDefinitionVersion) bool { return w.Name == v }) {
			return fmt.Errorf("the new CRD drops version %s, which custom resources are stored in: they would be lost (keep serving %s, with a conversion, until no object is stored in it)", v, v)
		}
	}
	return nil
}
