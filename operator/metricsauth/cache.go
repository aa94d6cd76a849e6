package metricsauth

import (
	"container/list"
	"sync"
	"time"
)

// key is what the caches are keyed by: a SHA-256, so that no token (nor
// anything else a scraper sends) is held in clear.
type key = [32]byte

// ttlCache is a bounded map whose entries expire: at most size entries,
// the least recently used dropped first when a new one needs room. Its
// bound keeps requests with ever new tokens from growing the memory.
type ttlCache[V any] struct {
	mu    sync.Mutex
	size  int
	now   func() time.Time
	order *list.List // of *entry[V], the most recently used first
	items map[key]*list.Element
}

type entry[V any] struct {
	key     key
	value   V
	expires time.Time
}

func newTTLCache[V any](size int, now func() time.Time) *ttlCache[V] {
	return &ttlCache[V]{size: size, now: now, order: list.New(), items: make(map[key]*list.Element, size)}
}

// get returns the value under k unless it is missing or expired.
func (c *ttlCache[V]) get(k key) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[V])
	if !c.now().Before(e.expires) {
		c.remove(el)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// put holds v under k for ttl, making room if the cache is full.
func (c *ttlCache[V]) put(k key, v V, ttl time.Duration) {
	if c.size <= 0 || ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*entry[V])
		e.value, e.expires = v, expires
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.size {
		c.remove(c.order.Back())
	}
	c.items[k] = c.order.PushFront(&entry[V]{key: k, value: v, expires: expires})
}

// len is the number of entries, expired ones included.
func (c *ttlCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *ttlCache[V]) remove(el *list.Element) {
	c.order.Remove(el)
	delete(c.items, el.Value.(*entry[V]).key)
}

// verdicts holds answers in two caches: those that let a request on, and
// refusals. Anyone who reaches the endpoint can cause refusals at will
// (made-up tokens, made-up methods); kept apart, they only push out each
// other, never the answer a scraper depends on.
type verdicts[V any] struct {
	allowed, denied *ttlCache[V]
	allowTTL        time.Duration
	denyTTL         time.Duration
}

func newVerdicts[V any](o Options) *verdicts[V] {
	return &verdicts[V]{
		allowed:  newTTLCache[V](o.CacheSize, o.now),
		denied:   newTTLCache[V](o.DenyCacheSize, o.now),
		allowTTL: o.AllowTTL,
		denyTTL:  o.DenyTTL,
	}
}

// get returns the answer under k from either cache.
func (v *verdicts[V]) get(k key) (V, bool) {
	if x, ok := v.allowed.get(k); ok {
		return x, true
	}
	return v.denied.get(k)
}

// put holds x under k in the cache its verdict belongs to.
func (v *verdicts[V]) put(k key, x V, allowed bool) {
	if allowed {
		v.allowed.put(k, x, v.allowTTL)
		return
	}
	v.denied.put(k, x, v.denyTTL)
}
