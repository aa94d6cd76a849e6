package scorecard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// deniedRequest is a request the API server refused with 403 Forbidden,
// as the RBAC rule that would have allowed it.
type deniedRequest struct {
	Verb, APIGroup, Resource, Namespace, Name string
}

// String says what was denied.
func (d deniedRequest) String() string {
	where := "cluster-wide"
	if d.Namespace != "" {
		where = "in namespace " + d.Namespace
	}
	what := d.Resource
	if d.Name != "" {
		what += " " + d.Name
	}
	return fmt.Sprintf("%s %s (API group %q) %s", d.Verb, what, d.APIGroup, where)
}

// Rule is the missing rule as a CSV permission's rule. A cluster-wide
// request needs it in clusterPermissions; a namespaced one in either.
func (d deniedRequest) Rule() string {
	field := "permissions or clusterPermissions"
	if d.Namespace == "" {
		field = "clusterPermissions"
	}
	return fmt.Sprintf(`%s rule {apiGroups: [%q], resources: [%q], verbs: [%q]}`, field, d.APIGroup, d.Resource, d.Verb)
}

// parseRequest turns a request to the API server into the RBAC attributes
// it is authorized by; ok is false for non-resource URLs.
func parseRequest(method string, u *url.URL) (d deniedRequest, ok bool) {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:] // api, v1
	case len(parts) >= 4 && parts[0] == "apis":
		d.APIGroup = parts[1]
		parts = parts[3:] // apis, group, version
	default:
		return d, false
	}
	// namespaces/NS/RESOURCE... is namespaced; namespaces[/NAME] is the
	// Namespace resource itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		d.Namespace, parts = parts[1], parts[2:]
	}
	d.Resource = parts[0]
	if len(parts) >= 2 {
		d.Name = parts[1]
	}
	if len(parts) >= 3 {
		d.Resource += "/" + parts[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case d.Name != "":
			d.Verb = "get"
		case u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1":
			d.Verb = "watch"
		default:
			d.Verb = "list"
		}
	case http.MethodPost:
		d.Verb = "create"
	case http.MethodPut:
		d.Verb = "update"
	case http.MethodPatch:
		d.Verb = "patch"
	case http.MethodDelete:
		d.Verb = "delete"
		if d.Name == "" {
			d.Verb = "deletecollection"
		}
	default:
		return d, false
	}
	return d, true
}

// forbiddenRecorder sees every response the operator gets and keeps the
// requests refused with 403, once each: whatever library made the request
// (controller-runtime's cache, Helm, the event recorder), a missing rule
// shows up here.
type forbiddenRecorder struct {
	mu     sync.Mutex
	denied []deniedRequest
}

func (f *forbiddenRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			if d, ok := parseRequest(req.Method, req.URL); ok {
				f.add(d)
			}
		}
		return resp, err
	})
}

func (f *forbiddenRecorder) add(d deniedRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.denied, d) {
		f.denied = append(f.denied, d)
	}
}

// Denied returns the refused requests in the order first seen.
func (f *forbiddenRecorder) Denied() []deniedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.denied)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
