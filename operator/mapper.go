package operator

import (
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// mappingTTL bounds how long a kind's mapping is reused: a CRD deleted and
// made again with another scope is seen after it.
const mappingTTL = 5 * time.Minute

// memoMapper is controller-runtime's REST mapper with the mapping of each
// group, version and kind kept: the cache asks for it on every read to know
// whether the kind is namespaced, and the mapper built a new one each time
// (an eighth of what the operator allocated while installing 1000 CRs).
type memoMapper struct {
	meta.RESTMapper
	now func() time.Time

	mu   sync.RWMutex
	byGV map[schema.GroupVersionKind]memoMapping
}

type memoMapping struct {
	mapping meta.RESTMapping
	at      time.Time
}

func newMemoMapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &memoMapper{RESTMapper: m, now: time.Now, byGV: map[schema.GroupVersionKind]memoMapping{}}, nil
}

// RESTMapping answers a request for one version from the memo; others, and
// failures, go to the mapper each time.
func (m *memoMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := gk.WithVersion(versions[0])
	m.mu.RLock()
	e, ok := m.byGV[key]
	m.mu.RUnlock()
	if ok && m.now().Sub(e.at) < mappingTTL {
		out := e.mapping
		return &out, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.byGV[key] = memoMapping{mapping: *mapping, at: m.now()}
	m.mu.Unlock()
	return mapping, nil
}
