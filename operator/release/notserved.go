package release

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// ErrAPINotServed: the chart rendered an object whose apiVersion and kind
// the cluster does not serve: an API Kubernetes removed (a template the
// values turn on that was written for an older Kubernetes), or a custom
// resource whose CRD is not installed. Nothing was changed; a retry can
// only help once the CRD is installed or the values or chart change.
var ErrAPINotServed = errors.New("API not served by the cluster")

// objectName is how Helm's builder names the object it could not map.
var objectName = regexp.MustCompile(`resource mapping not found for name: "([^"]*)"`)

// explainNotServed turns Helm's "no matches for kind ... ensure CRDs are
// installed first" into what it means for this cluster: the object, its
// API, and the versions of that kind the cluster serves instead, if any.
// Other errors are returned as they are.
func (c *Client) explainNotServed(err error) error {
	nk := noKindMatch(err)
	if nk == nil {
		return err
	}
	gvk := nk.GroupKind.WithVersion("")
	if len(nk.SearchedVersions) > 0 {
		gvk.Version = nk.SearchedVersions[0]
	}
	what := fmt.Sprintf("%s %s", gvk.GroupVersion(), gvk.Kind)
	if m := objectName.FindStringSubmatch(err.Error()); m != nil && m[1] != "" {
		what += " " + m[1]
	}
	var served []string
	if mappings, merr := c.mapper.RESTMappings(nk.GroupKind); merr == nil {
		for _, m := range mappings {
			served = append(served, m.GroupVersionKind.GroupVersion().String())
		}
	}
	if len(served) > 0 {
		return fmt.Errorf("%w: the chart renders %s, but this cluster serves %s only as %s: an API Kubernetes removed, which these values turn on; change the values so that the chart does not render it, or update the chart",
			ErrAPINotServed, what, gvk.Kind, strings.Join(served, ", "))
	}
	return fmt.Errorf("%w: the chart renders %s, which this cluster does not serve: install the CRD that defines it (or the component that serves %s), or change the values so that the chart does not render it; if it is an API Kubernetes removed, update the chart",
		ErrAPINotServed, what, groupOrCore(gvk.GroupVersion()))
}

// noKindMatch finds the mapping error in err, also inside the aggregate
// errors of Helm's builder (which do not unwrap).
func noKindMatch(err error) *meta.NoKindMatchError {
	var nk *meta.NoKindMatchError
	if errors.As(err, &nk) {
		return nk
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if nk := noKindMatch(e); nk != nil {
				return nk
			}
		}
	}
	return nil
}

func groupOrCore(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "the core API " + gv.Version
	}
	return gv.String()
}
