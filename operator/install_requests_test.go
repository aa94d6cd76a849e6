package operator

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// An install reads nothing its own writes answer (the objects it created are
// not read back to be compared): 11 requests for 2 objects. The floor is 4
// (the objects, the record, the status); the rest: the finalizer, the
// record written pending before deployed, an event, and Helm's own reads
// (the release's history, each object to check it belongs to no other
// release) and ours (the history of a release the index does not show
// yet: an adopted one has records without our labels).
func TestInstallRequests(t *testing.T) {
	clustertest.SkipIfShort(t)
	var requests atomic.Int64
	rec := &recordingTransport{}
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		rec.next = countingTransport{next: rt, n: &requests}
		return rec
	}
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Config = cfg })
	e := newEnv(t)
	ns := e.namespace()
	e.createApp(ns, "warmup", map[string]any{"greeting": "hi"}, nil)
	e.waitCondition(ns, "warmup", reconciler.TypeReady, metav1.ConditionTrue, "")
	waitSettled(t, &requests)

	before := requests.Load()
	rec.start()
	e.createApp(ns, "counted", map[string]any{"greeting": "hi"}, nil)
	e.waitCondition(ns, "counted", reconciler.TypeReady, metav1.ConditionTrue, "")
	waitSettled(t, &requests)
	n := requests.Load() - before
	t.Logf("an install of 2 objects: %d API requests:\n%s", n, strings.Join(rec.stop(), "\n"))
	if n > 11 {
		t.Errorf("an install of 2 objects sent %d API requests", n)
	}
}

// recordingTransport notes the method and path of each request while on.
type recordingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	on   bool
	seen []string
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	if r.on {
		r.seen = append(r.seen, req.Method+" "+req.URL.Path)
	}
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *recordingTransport) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.seen = true, nil
}

func (r *recordingTransport) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.seen
}
