package operator

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper maps Web in e2e.example.com/v1 and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	if gk.Kind != "Web" {
		return nil, errors.New("no match")
	}
	return &meta.RESTMapping{GroupVersionKind: gk.WithVersion("v1"), Scope: meta.RESTScopeNamespace}, nil
}

func TestMemoMapper(t *testing.T) {
	web := schema.GroupKind{Group: "e2e.example.com", Kind: "Web"}
	now := time.Now()
	for _, tt := range []struct {
		name  string
		ask   func(m *memoMapper)
		asked int
	}{
		{"one version, twice", func(m *memoMapper) { m.RESTMapping(web, "v1"); m.RESTMapping(web, "v1") }, 1},
		{"after the TTL", func(m *memoMapper) {
			m.RESTMapping(web, "v1")
			now = now.Add(mappingTTL)
			m.RESTMapping(web, "v1")
		}, 2},
		{"no version", func(m *memoMapper) { m.RESTMapping(web); m.RESTMapping(web) }, 2},
		{"a failure", func(m *memoMapper) {
			m.RESTMapping(schema.GroupKind{Kind: "Gone"}, "v1")
			m.RESTMapping(schema.GroupKind{Kind: "Gone"}, "v1")
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &countingMapper{}
			m := &memoMapper{RESTMapper: c, now: func() time.Time { return now }, byGV: map[schema.GroupVersionKind]memoMapping{}}
			tt.ask(m)
			if c.asked != tt.asked {
				t.Errorf("the mapper was asked %d times, want %d", c.asked, tt.asked)
			}
		})
	}
}
