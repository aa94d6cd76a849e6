package release

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestIndexKey(t *testing.T) {
	for _, tt := range []struct {
		selector string
		key      string
		ok       bool
	}{
		{"app=web", "app=web", true},
		{"app.kubernetes.io/name=web,app.kubernetes.io/instance=a", "app.kubernetes.io/instance=a", true},
		{"tier in (front),app!=x", "tier=front", true},
		{"tier in (front,back)", "", false},
		{"app!=web", "", false},
		{"app", "", false},
		{"", "", false},
	} {
		sel, err := labels.Parse(tt.selector)
		if err != nil {
			t.Fatal(err)
		}
		if key, ok := indexKey(sel); key != tt.key || ok != tt.ok {
			t.Errorf("indexKey(%q) = %q, %v; want %q, %v", tt.selector, key, ok, tt.key, tt.ok)
		}
	}
}
