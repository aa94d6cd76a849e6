package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
)

func TestVerb(t *testing.T) {
	for _, tt := range []struct{ method, url, want string }{
		{http.MethodGet, "/api/v1/namespaces/a/configmaps/b", "get"},
		{http.MethodGet, "/api/v1/namespaces/a/secrets?labelSelector=owner%3Dhelm", "get"},
		{http.MethodGet, "/apis/apps/v1/deployments?allowWatchBookmarks=true&resourceVersion=5&watch=true", VerbWatch},
		{http.MethodGet, "/api/v1/pods?watch=1", VerbWatch},
		{http.MethodGet, "/api/v1/pods?watch=false", "get"},
		{http.MethodPost, "/api/v1/namespaces/a/secrets", "create"},
		{http.MethodPut, "/api/v1/namespaces/a/secrets/b", "update"},
		{http.MethodPatch, "/api/v1/namespaces/a/secrets/b", "patch"},
		{http.MethodDelete, "/api/v1/namespaces/a/secrets/b", "delete"},
	} {
		if got := verb(httptest.NewRequest(tt.method, tt.url, nil)); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.method, tt.url, got, tt.want)
		}
	}
}

// Every request through the config countRequests returns is counted once.
func TestCountRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	c := newRequestCounter(reg)
	cfg := countRequests(&rest.Config{Host: srv.URL}, c)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"/api/v1/pods", "/api/v1/pods?watch=true", "/api/v1/pods"} {
		resp, err := client.Get(srv.URL + url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got, err := testutil.GatherAndCount(reg, RequestsMetric); err != nil || got != 2 {
		t.Errorf("%d series (%v), want 2: get and watch", got, err)
	}
	if get, watch := testutil.ToFloat64(c.WithLabelValues("get")), testutil.ToFloat64(c.WithLabelValues(VerbWatch)); get != 2 || watch != 1 {
		t.Errorf("get %v, watch %v; want 2 and 1", get, watch)
	}
}
