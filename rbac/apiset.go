package rbac

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// servedAPIVersions is .Capabilities.APIVersions of a Kubernetes 1.minor
// cluster out of the box: every group/version and group/version/kind it
// serves. From the built-in table (1.36, every API version enabled) it
// takes the GA versions only, since alpha versions and the betas added
// since 1.24 are off by default; plus the versions of the deprecated API
// migration guide still served in 1.minor. For a version older than the
// table's, kinds added since cannot be told apart: they are in the set.
func servedAPIVersions(minor int) []string {
	set := map[string]bool{}
	add := func(gvk schema.GroupVersionKind) {
		gv := gvk.GroupVersion().String()
		set[gv] = true
		set[gv+"/"+gvk.Kind] = true
	}
	for _, r := range builtinResources {
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		if isPrerelease(r.Version) {
			continue
		}
		if c, ok := apiChangeIndex[gvk]; ok && c.Removed != 0 && minor >= c.Removed {
			continue
		}
		add(gvk)
	}
	for _, c := range apiChanges {
		if c.Removed == 0 || minor < c.Removed {
			add(c.GVK)
		}
	}
	return sortedKeys(set)
}

// discoveredAPIVersions is the API set a cluster's discovery lists.
func discoveredAPIVersions(discovered map[schema.GroupVersionKind]mapping) []string {
	set := map[string]bool{}
	for gvk := range discovered {
		gv := gvk.GroupVersion().String()
		set[gv] = true
		set[gv+"/"+gvk.Kind] = true
	}
	return sortedKeys(set)
}

// kubernetesGroups are the API groups Kubernetes itself serves (or served):
// whether a cluster serves one of their versions is the target version's
// business; any other group comes from a CRD or an aggregated API server.
var kubernetesGroups = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range builtinResources {
		m[r.Group] = true
	}
	for _, c := range apiChanges {
		m[c.GVK.Group] = true
	}
	return m
}()

// probedAPIs are the APIs the chart's templates test for with
// .Capabilities.APIVersions.Has that are not Kubernetes' own and not in
// served: those of CRDs (ServiceMonitor, ScaledObject...) or aggregated API
// servers, which a cluster may or may not serve. The derivation renders
// also with them present.
func probedAPIs(g *chartGates, served []string) []string {
	have := map[string]bool{}
	for _, s := range served {
		have[s] = true
	}
	set := map[string]bool{}
	for p := range g.Probes {
		if have[p] || kubernetesGroups[probeGroup(p)] {
			continue
		}
		set[p] = true
	}
	return sortedKeys(set)
}

// probeGroup is the group of "group/version[/Kind]" ("" for "v1").
func probeGroup(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) == 1 || (len(parts) == 2 && parts[0] == "v1") {
		return ""
	}
	return parts[0]
}

// crdAPIVersions are the APIs the CRDs under the crds/ directories of the
// chart and its subcharts define: Helm installs them before it renders the
// templates, so a probe for them finds them.
func crdAPIVersions(ch *helmchart.Chart) []string {
	set := map[string]bool{}
	for _, f := range ch.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(f.File.Data)) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if yaml.Unmarshal([]byte(doc), crd) != nil || crd.Kind != "CustomResourceDefinition" {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				gv := crd.Spec.Group + "/" + v.Name
				set[gv] = true
				set[gv+"/"+crd.Spec.Names.Kind] = true
			}
		}
	}
	return sortedKeys(set)
}
