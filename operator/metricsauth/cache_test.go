package metricsauth

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// clock is a settable time for the caches.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func k(s string) key { return sha256.Sum256([]byte(s)) }

// An entry is served until its TTL has passed, then dropped.
func TestCacheTTL(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		hit   bool
	}{
		{name: "fresh", after: 0, hit: true},
		{name: "just before expiry", after: 10*time.Second - time.Nanosecond, hit: true},
		{name: "at expiry", after: 10 * time.Second},
		{name: "long after", after: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			cache := newTTLCache[string](4, c.now)
			cache.put(k("a"), "A", 10*time.Second)
			c.advance(tt.after)
			v, ok := cache.get(k("a"))
			if ok != tt.hit || ok && v != "A" {
				t.Fatalf("get = %q, %t; want hit %t", v, ok, tt.hit)
			}
			if !ok && cache.len() != 0 {
				t.Errorf("an expired entry stays: %d entries", cache.len())
			}
		})
	}
}

// The cache never holds more than its size; the least recently used entry
// makes room, and a put of a held key refreshes it in place.
func TestCacheBound(t *testing.T) {
	c := newClock()
	cache := newTTLCache[int](3, c.now)
	for i, s := range []string{"a", "b", "c"} {
		cache.put(k(s), i, time.Minute)
	}
	if _, ok := cache.get(k("a")); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	cache.put(k("d"), 3, time.Minute)
	for s, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := cache.get(k(s)); ok != want {
			t.Errorf("%s held %t, want %t", s, ok, want)
		}
	}
	// A put of a held key replaces its value and expiry, taking no room.
	cache.put(k("c"), 30, 2*time.Minute)
	c.advance(90 * time.Second)
	if v, ok := cache.get(k("c")); !ok || v != 30 {
		t.Errorf("c = %d, %t; want 30 refreshed", v, ok)
	}
	// A flood of new keys (requests with ever new tokens) stays bounded.
	for i := range 10000 {
		cache.put(k(fmt.Sprint("flood", i)), i, time.Minute)
		if n := cache.len(); n > 3 {
			t.Fatalf("%d entries after %d puts, bound 3", n, i+1)
		}
	}
}

// A cache of size 0, or a TTL of 0 or less, holds nothing.
func TestCacheDisabled(t *testing.T) {
	tests := []struct {
		name string
		size int
		ttl  time.Duration
	}{
		{name: "size 0", size: 0, ttl: time.Minute},
		{name: "TTL 0", size: 4, ttl: 0},
		{name: "negative TTL", size: 4, ttl: -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := newTTLCache[bool](tt.size, newClock().now)
			cache.put(k("a"), true, tt.ttl)
			if _, ok := cache.get(k("a")); ok || cache.len() != 0 {
				t.Errorf("held an entry: %d", cache.len())
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header, token string
		ok            bool
	}{
		{header: "Bearer abc.def", token: "abc.def", ok: true},
		{header: "bearer abc", token: "abc", ok: true},
		{header: "BEARER  abc ", token: "abc", ok: true},
		{header: ""},
		{header: "Bearer"},
		{header: "Bearer "},
		{header: "Basic dXNlcjpwYXNz"},
		{header: "Bearer abc def"},
		{header: "Bearerabc"},
		{header: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			token, ok := bearerToken(tt.header)
			if token != tt.token || ok != tt.ok {
				t.Errorf("bearerToken(%q) = %q, %t; want %q, %t", tt.header, token, ok, tt.token, tt.ok)
			}
		})
	}
}

// On any Authorization header: a token bearerToken returns is one word of
// the header, after the Bearer scheme, and parses back to itself; through
// the filter, a header it refuses is a 401 that costs no review, and only
// the reader's token gets through.
func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{"Bearer abc.def", "bearer abc", "BEARER  abc ", "", "Bearer", "Bearer ",
		"Basic dXNlcjpwYXNz", "Bearer abc def", "Bearerabc", "abc", "Bearer\tabc", "Bearer a\tb",
		"Bearer " + readerToken, " bearer  " + readerToken + "\t", "Bearer " + strangerToken} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := bearerToken(header)
		trimmed := strings.TrimSpace(header)
		switch {
		case !ok && token != "":
			t.Errorf("bearerToken(%q) refused the header but returned %q", header, token)
		case ok && (token == "" || strings.ContainsAny(token, " \t") || !strings.Contains(header, token)):
			t.Errorf("bearerToken(%q) = %q: not one word of the header", header, token)
		case ok && (len(trimmed) < 7 || !strings.EqualFold(trimmed[:7], "Bearer ")):
			t.Errorf("bearerToken(%q) = %q without the Bearer scheme", header, token)
		}
		if again, okAgain := bearerToken("Bearer " + token); ok && (!okAgain || again != token) {
			t.Errorf("bearerToken(%q) = %q, which parses back as %q, %t", header, token, again, okAgain)
		}

		api := newFakeAPI()
		_, h := fakeFilter(t, api, unbounded(Options{}))
		r := httptest.NewRequest(http.MethodGet, Path, nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		tokens, access := api.take()
		switch {
		case (w.Code == http.StatusOK) != (ok && token == readerToken):
			t.Errorf("%q: %d", header, w.Code)
		case !ok && (w.Code != http.StatusUnauthorized || tokens+access != 0):
			t.Errorf("%q, refused by the parser: %d after %d reviews, want 401 after none", header, w.Code, tokens+access)
		}
	})
}

// The decision cache tells apart every part of the question: a user in
// another group, or another path or verb, is asked about again.
func TestAccessKey(t *testing.T) {
	base := authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus", UID: "u1",
		Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{"a": {"1"}}}
	variants := map[string]struct {
		user       authenticationv1.UserInfo
		path, verb string
	}{
		"base":   {user: base, path: "/metrics", verb: "get"},
		"user":   {user: with(base, func(u *authenticationv1.UserInfo) { u.Username = "other" }), path: "/metrics", verb: "get"},
		"uid":    {user: with(base, func(u *authenticationv1.UserInfo) { u.UID = "u2" }), path: "/metrics", verb: "get"},
		"groups": {user: with(base, func(u *authenticationv1.UserInfo) { u.Groups = []string{"system:masters"} }), path: "/metrics", verb: "get"},
		"extra":  {user: with(base, func(u *authenticationv1.UserInfo) { u.Extra = map[string]authenticationv1.ExtraValue{"a": {"2"}} }), path: "/metrics", verb: "get"},
		"path":   {user: base, path: "/debug", verb: "get"},
		"verb":   {user: base, path: "/metrics", verb: "post"},
	}
	seen := map[key]string{}
	for name, v := range variants {
		kk, err := accessKey(accessSpec(v.user, v.path, v.verb))
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[kk]; ok {
			t.Errorf("%s and %s share a key", name, other)
		}
		seen[kk] = name
		again, _ := accessKey(accessSpec(v.user, v.path, v.verb))
		if again != kk {
			t.Errorf("%s: the key is not stable", name)
		}
	}
}

func with(u authenticationv1.UserInfo, f func(*authenticationv1.UserInfo)) authenticationv1.UserInfo {
	f(&u)
	return u
}
