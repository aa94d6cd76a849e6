package rbac

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/chart"
)

// Source says where a kind's resource name and scope came from.
type Source string

const (
	// SourceDiscovery is the discovery of the cluster given in Options.Config.
	SourceDiscovery Source = "discovery"
	// SourceChartCRD is a CustomResourceDefinition the chart ships or renders.
	SourceChartCRD Source = "chart CRD"
	// SourceBuiltin is the built-in table of Kubernetes 1.36 APIs.
	SourceBuiltin Source = "Kubernetes 1.36"
	// SourceMigrationGuide is the deprecated API migration guide's table,
	// for kinds removed before 1.36 (PodSecurityPolicy) on an older target.
	SourceMigrationGuide Source = "Kubernetes deprecated API migration guide"
	// SourceGuessed is kubectl's guess from the kind's name: a warning.
	SourceGuessed Source = "guessed"
)

// mapping is a kind's resource name and scope.
type mapping struct {
	Resource   string
	Namespaced bool
	Source     Source
}

// resolver maps kinds to resources: the cluster's discovery first when there
// is one, then the chart's own CRDs, then the built-in table, else a guess.
type resolver struct {
	discovered map[schema.GroupVersionKind]mapping
	// discoveredGK holds the first version discovery listed for a group/kind.
	discoveredGK map[schema.GroupKind]mapping
	crds         map[schema.GroupKind]mapping
}

func newResolver(cfg *rest.Config) (*resolver, error) {
	r := &resolver{crds: map[schema.GroupKind]mapping{}}
	if cfg == nil {
		return r, nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", cfg.Host, err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery of %s: %w", cfg.Host, err)
	}
	r.discovered = map[schema.GroupVersionKind]mapping{}
	r.discoveredGK = map[schema.GroupKind]mapping{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") {
				continue
			}
			m := mapping{Resource: res.Name, Namespaced: res.Namespaced, Source: SourceDiscovery}
			r.discovered[gv.WithKind(res.Kind)] = m
			if _, ok := r.discoveredGK[schema.GroupKind{Group: gv.Group, Kind: res.Kind}]; !ok {
				r.discoveredGK[schema.GroupKind{Group: gv.Group, Kind: res.Kind}] = m
			}
		}
	}
	return r, nil
}

// addCRD learns the kind a CustomResourceDefinition manifest defines.
func (r *resolver) addCRD(m chart.Manifest) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object.Object, crd); err != nil {
		return fmt.Errorf("%s: CustomResourceDefinition %s: %w", m.Source, m.Object.GetName(), err)
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	r.crds[gk] = mapping{Resource: crd.Spec.Names.Plural, Namespaced: crd.Spec.Scope != apiextensionsv1.ClusterScoped, Source: SourceChartCRD}
	return nil
}

// resolve maps gvk to its resource and scope.
func (r *resolver) resolve(gvk schema.GroupVersionKind) mapping {
	if m, ok := r.discovered[gvk]; ok {
		return m
	}
	if m, ok := r.crds[gvk.GroupKind()]; ok {
		return m
	}
	if m, ok := r.discoveredGK[gvk.GroupKind()]; ok {
		return m
	}
	if b, ok := builtins.lookup(gvk); ok {
		return mapping{Resource: b.Resource, Namespaced: b.Namespaced, Source: SourceBuiltin}
	}
	if m, ok := oldKind(gvk); ok {
		return m
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	// An unknown kind is most likely a namespaced custom resource.
	return mapping{Resource: plural.Resource, Namespaced: true, Source: SourceGuessed}
}
