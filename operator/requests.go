package operator

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/operator/releasemetrics"
)

// RequestsMetric counts the operator's requests to the API server by verb
// (VerbWatch, get, create, update, patch, delete), beside client-go's
// rest_client_requests_total, which cannot tell a watch from a read. A
// release in sync costs none; what an idle operator sends are its
// informers' watches, each renewed every 5 to 10 minutes.
const RequestsMetric = "chartpilot_api_requests_total"

// VerbWatch is RequestsMetric's verb of a watch (a GET with watch=true).
const VerbWatch = "watch"

// newRequestCounter registers RequestsMetric with reg.
func newRequestCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	return releasemetrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsMetric,
		Help: "Requests sent to the API server, by verb; watch is a watch started (informers renew theirs every 5 to 10 minutes).",
	}, []string{"verb"}))
}

// countRequests returns a copy of cfg whose requests counter counts.
func countRequests(cfg *rest.Config, counter *prometheus.CounterVec) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requestCounter{next: rt, counter: counter} })
	return cfg
}

type requestCounter struct {
	next    http.RoundTripper
	counter *prometheus.CounterVec
}

func (t requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	t.counter.WithLabelValues(verb(req)).Inc()
	return t.next.RoundTrip(req)
}

// verb names a request as the API server's audit would, but for lists,
// which count as gets.
func verb(req *http.Request) string {
	if req.Method == http.MethodGet {
		if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
			return VerbWatch
		}
	}
	switch req.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	}
	return strings.ToLower(req.Method)
}
