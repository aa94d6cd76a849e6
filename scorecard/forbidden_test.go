package scorecard

import (
	"net/http"
	"net/url"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		method, url string
		want        deniedRequest
		ok          bool
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cm", deniedRequest{Verb: "get", Resource: "configmaps", Namespace: "ns", Name: "cm"}, true},
		{"GET", "/api/v1/namespaces/ns/configmaps?labelSelector=a", deniedRequest{Verb: "list", Resource: "configmaps", Namespace: "ns"}, true},
		{"GET", "/api/v1/namespaces/ns/secrets?watch=true", deniedRequest{Verb: "watch", Resource: "secrets", Namespace: "ns"}, true},
		{"GET", "/api/v1/namespaces/ns", deniedRequest{Verb: "get", Resource: "namespaces", Name: "ns"}, true},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", deniedRequest{Verb: "create", APIGroup: "apps", Resource: "deployments", Namespace: "ns"}, true},
		{"PUT", "/apis/charts.example.com/v1alpha1/namespaces/ns/validateds/x/status", deniedRequest{Verb: "update", APIGroup: "charts.example.com", Resource: "validateds/status", Namespace: "ns", Name: "x"}, true},
		{"PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterroles/r", deniedRequest{Verb: "patch", APIGroup: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "r"}, true},
		{"DELETE", "/api/v1/namespaces/ns/pods", deniedRequest{Verb: "deletecollection", Resource: "pods", Namespace: "ns"}, true},
		{"GET", "/healthz", deniedRequest{}, false},
		{"GET", "/apis", deniedRequest{}, false},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parseRequest(tt.method, u)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s %s = %+v %v, want %+v %v", tt.method, tt.url, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDeniedRequestRule(t *testing.T) {
	d := deniedRequest{Verb: "list", APIGroup: "", Resource: "configmaps", Namespace: "ns"}
	if got, want := d.String(), `list configmaps (API group "") in namespace ns`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if got, want := d.Rule(), `permissions or clusterPermissions rule {apiGroups: [""], resources: ["configmaps"], verbs: ["list"]}`; got != want {
		t.Errorf("Rule() = %s, want %s", got, want)
	}
	d = deniedRequest{Verb: "create", APIGroup: "scheduling.k8s.io", Resource: "priorityclasses"}
	if got, want := d.Rule(), `clusterPermissions rule {apiGroups: ["scheduling.k8s.io"], resources: ["priorityclasses"], verbs: ["create"]}`; got != want {
		t.Errorf("Rule() = %s, want %s", got, want)
	}
}

func TestForbiddenRecorder(t *testing.T) {
	var f forbiddenRecorder
	status := http.StatusOK
	rt := f.wrap(roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status}, nil
	}))
	do := func(method, u string) {
		req, err := http.NewRequest(method, "https://127.0.0.1:6443"+u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	do("GET", "/api/v1/namespaces/ns/configmaps")
	status = http.StatusForbidden
	do("DELETE", "/api/v1/namespaces/ns/configmaps/a")
	do("DELETE", "/api/v1/namespaces/ns/configmaps/a")
	do("GET", "/api/v1/namespaces/ns/secrets")
	got := f.Denied()
	want := []deniedRequest{
		{Verb: "delete", Resource: "configmaps", Namespace: "ns", Name: "a"},
		{Verb: "list", Resource: "secrets", Namespace: "ns"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("denied %+v, want %+v once each, in order", got, want)
	}
}
