package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The kinds the manifests of a project are sorted by.
const (
	kindCSV                = "ClusterServiceVersion"
	kindCRD                = "CustomResourceDefinition"
	kindDeployment         = "Deployment"
	kindServiceAccount     = "ServiceAccount"
	kindRole               = "Role"
	kindClusterRole        = "ClusterRole"
	kindRoleBinding        = "RoleBinding"
	kindClusterRoleBinding = "ClusterRoleBinding"
	kindNamespace          = "Namespace"
	kindService            = "Service"
	kindServiceMonitor     = "ServiceMonitor"
	kindPrometheusRule     = "PrometheusRule"
	scorecardGroup         = "scorecard.operatorframework.io"
)

// bundleKinds are the kinds OLM installs from a bundle's manifests besides
// the CSV and CRDs (operator-registry's supported kinds).
var bundleKinds = map[string]bool{
	"Secret": true, kindClusterRole: true, kindClusterRoleBinding: true, "ConfigMap": true,
	kindServiceAccount: true, kindService: true, kindRole: true, kindRoleBinding: true,
	kindPrometheusRule: true, kindServiceMonitor: true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "ConsoleYAMLSample": true,
	"ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true, "NetworkPolicy": true,
}

// kustomizeBuild runs `kustomize build dir` in process.
func kustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON: numbers become int64 or float64, as Unstructured wants.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// projectManifests are a project's kustomize output sorted by what the bundle
// does with each object.
type projectManifests struct {
	// csv is the ClusterServiceVersion base, if kustomize rendered one.
	csv *unstructured.Unstructured
	// crds become bundle manifests and the CSV's owned APIs.
	crds []*unstructured.Unstructured
	// deployments become the CSV's install strategy.
	deployments []*unstructured.Unstructured
	// roles, clusterRoles and their bindings become permissions when bound
	// to a deployment's service account, bundle manifests otherwise.
	roles, clusterRoles, roleBindings, clusterRoleBindings []*unstructured.Unstructured
	// serviceAccounts are dropped when a deployment runs as them (OLM
	// creates those), bundle manifests otherwise.
	serviceAccounts []*unstructured.Unstructured
	// samples become alm-examples.
	samples []*unstructured.Unstructured
	// scorecard is the scorecard Configuration, if any.
	scorecard *unstructured.Unstructured
	// others are written to the bundle as they are.
	others []*unstructured.Unstructured
}

// loadManifests builds config/manifests, and config/samples and
// config/scorecard apart to tell samples and the scorecard configuration
// from the rest.
func loadManifests(projectDir string) (*projectManifests, error) {
	manifestsDir := filepath.Join(projectDir, "config", "manifests")
	if _, err := os.Stat(filepath.Join(manifestsDir, "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("%w: %s has no kustomization.yaml (a chartpilot or operator-sdk project has one)", ErrNoManifests, manifestsDir)
	}
	objs, err := kustomizeBuild(manifestsDir)
	if err != nil {
		return nil, err
	}
	var samples []*unstructured.Unstructured
	if dir := filepath.Join(projectDir, "config", "samples"); exists(filepath.Join(dir, "kustomization.yaml")) {
		if samples, err = kustomizeBuild(dir); err != nil {
			return nil, err
		}
	}
	m, err := sortManifests(objs, samples, manifestsDir)
	if err != nil {
		return nil, err
	}
	if m.scorecard == nil {
		if dir := filepath.Join(projectDir, "config", "scorecard"); exists(filepath.Join(dir, "kustomization.yaml")) {
			sc, err := kustomizeBuild(dir)
			if err != nil {
				return nil, err
			}
			for _, o := range sc {
				if o.GroupVersionKind().Group == scorecardGroup {
					m.scorecard = o
				}
			}
		}
	}
	if len(m.deployments) == 0 {
		return nil, fmt.Errorf("%w: kustomize build %s renders no apps/v1 Deployment (config/manager)", ErrNoDeployment, manifestsDir)
	}
	return m, nil
}

// sortManifests sorts the objects kustomize built of manifestsDir by what
// the bundle does with each; samples (config/samples' own build) are taken
// from there, not from objs.
func sortManifests(objs, samples []*unstructured.Unstructured, manifestsDir string) (*projectManifests, error) {
	sampleIDs := map[string]bool{}
	for _, s := range samples {
		sampleIDs[objectID(s)] = true
	}
	m := &projectManifests{samples: samples}
	for _, o := range objs {
		// Names become bundle file names; the API server refuses these too.
		if msgs := path.IsValidPathSegmentName(o.GetName()); len(msgs) > 0 {
			return nil, fmt.Errorf("%s: %s: name %q: %s", manifestsDir, describe(o), o.GetName(), strings.Join(msgs, "; "))
		}
		gvk := o.GroupVersionKind()
		if gvk.Kind == kindCRD {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
			for _, name := range []string{group, plural} {
				if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
					return nil, fmt.Errorf("%s: %s: group and plural %q: %s", manifestsDir, describe(o), name, strings.Join(msgs, "; "))
				}
			}
		}
		switch {
		case sampleIDs[objectID(o)]:
			// Taken from the samples' own build above.
		case gvk.Group == scorecardGroup:
			m.scorecard = o
		case gvk.Kind == kindCSV:
			if m.csv != nil {
				return nil, fmt.Errorf("%s renders two ClusterServiceVersions: %s and %s", manifestsDir, m.csv.GetName(), o.GetName())
			}
			m.csv = o
		case gvk.Kind == kindCRD:
			m.crds = append(m.crds, o)
		case gvk == (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kindDeployment}):
			m.deployments = append(m.deployments, o)
		case gvk.Group == "rbac.authorization.k8s.io" && gvk.Kind == kindRole:
			m.roles = append(m.roles, o)
		case gvk.Group == "rbac.authorization.k8s.io" && gvk.Kind == kindClusterRole:
			m.clusterRoles = append(m.clusterRoles, o)
		case gvk.Group == "rbac.authorization.k8s.io" && gvk.Kind == kindRoleBinding:
			m.roleBindings = append(m.roleBindings, o)
		case gvk.Group == "rbac.authorization.k8s.io" && gvk.Kind == kindClusterRoleBinding:
			m.clusterRoleBindings = append(m.clusterRoleBindings, o)
		case gvk.Group == "" && gvk.Kind == kindServiceAccount:
			m.serviceAccounts = append(m.serviceAccounts, o)
		case gvk.Group == "" && gvk.Kind == kindNamespace:
			// OLM installs into the namespace the user picks.
		default:
			m.others = append(m.others, o)
		}
	}
	return m, nil
}

// ErrNoManifests means the project has no config/manifests to build.
var ErrNoManifests = errors.New("no config/manifests")

// ErrNoDeployment means the manifests have no operator Deployment.
var ErrNoDeployment = errors.New("no operator deployment")
