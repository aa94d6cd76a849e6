package crdready

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// view is one look at discovery, fetched as it is first needed and kept
// for that look only: the aggregated document once, each group-version's
// resource list once.
type view struct {
	disc *discovery.DiscoveryClient

	fetched bool
	err     error
	// groups are the group-versions the aggregated document lists.
	groups map[schema.GroupVersion]bool
	// resources are its resources by group-version; nil when the server
	// does not serve aggregated discovery.
	resources map[schema.GroupVersion]*metav1.APIResourceList
	// failed are the group-versions whose discovery failed (an aggregated
	// API server that is down, for instance).
	failed map[schema.GroupVersion]error

	lists map[schema.GroupVersion]gvList
}

type gvList struct {
	list *metav1.APIResourceList
	err  error
}

func (v *view) fetch() {
	v.fetched = true
	groups, resources, failed, err := v.disc.GroupsAndMaybeResources()
	if err != nil {
		v.err = err
		return
	}
	v.groups = map[schema.GroupVersion]bool{}
	for _, g := range groups.Groups {
		for _, ver := range g.Versions {
			v.groups[schema.GroupVersion{Group: g.Name, Version: ver.Version}] = true
		}
	}
	v.resources, v.failed = resources, failed
}

func (v *view) list(gv schema.GroupVersion) gvList {
	if l, ok := v.lists[gv]; ok {
		return l
	}
	if v.lists == nil {
		v.lists = map[schema.GroupVersion]gvList{}
	}
	list, err := v.disc.ServerResourcesForGroupVersion(gv.String())
	v.lists[gv] = gvList{list: list, err: err}
	return v.lists[gv]
}

// missing says where discovery does not list kind in gv (as resource
// plural, when not empty), or "" when both the aggregated document and
// the group-version's resource list do.
func (v *view) missing(gv schema.GroupVersion, kind, plural string) string {
	what := kind
	if plural != "" {
		what = fmt.Sprintf("%s (%s)", plural, kind)
	}
	if !v.fetched {
		v.fetch()
	}
	if v.err != nil {
		return fmt.Sprintf("discovery failed: %v", v.err)
	}
	if !v.groups[gv] {
		return fmt.Sprintf("discovery (/api, /apis) does not list group-version %s", gv)
	}
	if err, ok := v.failed[gv]; ok {
		return fmt.Sprintf("discovery of %s failed: %v", gv, err)
	}
	if v.resources != nil && !lists(v.resources[gv], kind, plural) {
		return fmt.Sprintf("aggregated discovery (/apis) lists no %s in %s", what, gv)
	}
	l := v.list(gv)
	if l.err != nil {
		return fmt.Sprintf("%s: %v", path(gv), l.err)
	}
	if !lists(l.list, kind, plural) {
		return fmt.Sprintf("%s lists no %s", path(gv), what)
	}
	return ""
}

// lists reports whether list has a resource of kind (named plural, when
// not empty); subresources do not count.
func lists(list *metav1.APIResourceList, kind, plural string) bool {
	if list == nil {
		return false
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool {
		return r.Kind == kind && !strings.Contains(r.Name, "/") && (plural == "" || r.Name == plural)
	})
}

// path is the discovery endpoint of gv.
func path(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.String()
}
