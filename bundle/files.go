package bundle

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// monitoring is what the bundle ships for monitoring, as capability evidence.
type monitoring struct {
	metricsService, serviceMonitor, prometheusRule bool
}

// manifestFiles adds the CRDs, the objects OLM installs from a bundle that
// the install strategy did not take in, and the scorecard configuration.
func (g *generation) manifestFiles(files map[string][]byte, m *projectManifests, consumed map[string]bool) (monitoring, error) {
	var mon monitoring
	for _, o := range m.crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		if err := addObject(files, registryv1.ManifestsDir+"/"+group+"_"+plural+".yaml", o.DeepCopy()); err != nil {
			return mon, err
		}
	}
	extras := slices.Concat(m.others, m.roles, m.clusterRoles, m.roleBindings, m.clusterRoleBindings, m.serviceAccounts)
	for _, o := range extras {
		if consumed[objectID(o)] {
			continue
		}
		if !bundleKinds[o.GetKind()] {
			g.warn("%s: OLM does not install this kind from a bundle; it is left out", describe(o))
			continue
		}
		switch o.GetKind() {
		case kindService:
			mon.metricsService = mon.metricsService || strings.Contains(o.GetName(), "metrics")
		case kindServiceMonitor:
			mon.serviceMonitor = true
		case kindPrometheusRule:
			mon.prometheusRule = true
		}
		c := o.DeepCopy()
		c.SetNamespace("") // OLM installs into the operator's namespace
		if err := addObject(files, registryv1.ManifestsDir+"/"+manifestFileName(o), c); err != nil {
			return mon, err
		}
	}
	return mon, g.scorecardFile(files, m)
}

// addObject adds an object's YAML under name, refusing a second one there.
func addObject(files map[string][]byte, name string, o *unstructured.Unstructured) error {
	if _, dup := files[name]; dup {
		return fmt.Errorf("two objects would be written to %s", name)
	}
	data, err := marshalObject(o.Object)
	if err != nil {
		return err
	}
	files[name] = data
	return nil
}

// scorecardFile adds the scorecard configuration, when the project has one.
func (g *generation) scorecardFile(files map[string][]byte, m *projectManifests) error {
	if m.scorecard == nil {
		g.warn("no scorecard configuration (config/scorecard): the bundle carries no tests")
		return nil
	}
	data, err := marshalObject(m.scorecard.DeepCopy().Object)
	if err != nil {
		return err
	}
	files[registryv1.ScorecardConfigFile] = data
	return nil
}

// manifestFileName is operator-sdk's file name for an extra bundle object:
// name_group_version_kind.yaml (without group for the core API).
func manifestFileName(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	parts := []string{o.GetName()}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	parts = append(parts, gvk.Version, strings.ToLower(gvk.Kind))
	return strings.Join(parts, "_") + ".yaml"
}
