package olm

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Manifest is a typed object as the API server takes it and a user reads
// it: no status, no creationTimestamp, and none of the empty fields that
// typed structs without omitempty serialize. OLM v0's and v1's plans both
// apply and print their objects through it.
func Manifest(o any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	pruned, _ := pruneEmpty(m).(map[string]any)
	return &unstructured.Unstructured{Object: pruned}, nil
}

// pruneEmpty drops nil values, empty strings and empty maps and lists.
func pruneEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := pruneEmpty(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
	case []any:
		if len(t) == 0 {
			return nil
		}
		// Elements stay: "" in a list means something (the core API group).
		for i, e := range t {
			if m, ok := e.(map[string]any); ok {
				if p := pruneEmpty(m); p != nil {
					t[i] = p
				} else {
					t[i] = map[string]any{}
				}
			}
		}
	case string:
		if t == "" {
			return nil
		}
	case nil:
		return nil
	}
	return v
}
