package olm

import (
	"fmt"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels put on the objects Subscribe creates, so that Unsubscribe removes
// only what chartpilot made.
const (
	// ManagedByLabel is app.kubernetes.io/managed-by: apply.FieldManager.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// PackageLabel names the package an object was created for.
	PackageLabel = "olm.chartpilot.io/package"
)

// NewScheme returns a scheme with OLM's types and the core ones the package reads.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, apiextensionsv1.AddToScheme,
		rbacv1.AddToScheme, admissionregistrationv1.AddToScheme, schedulingv1.AddToScheme,
		v1alpha1.AddToScheme, operatorsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewClient returns a client for cfg that knows OLM's types.
func NewClient(cfg *rest.Config) (client.Client, error) {
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	return NewClientWithScheme(cfg, s)
}

// NewClientWithScheme returns a client for cfg with scheme s. Without a
// rate limit in cfg, it allows kubectl's: client-go's default of 5 requests
// a second makes a few dozen reads and access reviews take seconds.
func NewClientWithScheme(cfg *rest.Config, s *runtime.Scheme) (client.Client, error) {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 50, 300
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, nil
}
