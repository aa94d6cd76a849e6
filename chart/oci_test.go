package chart

import "testing"

func TestSplitOCIReference(t *testing.T) {
	tests := map[string][2]string{
		"oci://127.0.0.1:5000/charts/webapp":       {"127.0.0.1:5000/charts/webapp", ""},
		"oci://127.0.0.1:5000/charts/webapp:0.1.0": {"127.0.0.1:5000/charts/webapp", "0.1.0"},
		"oci://registry.example.com/webapp:1.0.0":  {"registry.example.com/webapp", "1.0.0"},
		"oci://registry.example.com/webapp":        {"registry.example.com/webapp", ""},
	}
	for in, want := range tests {
		if r, tag := SplitOCIReference(in); r != want[0] || tag != want[1] {
			t.Errorf("SplitOCIReference(%q) = %q, %q; want %q, %q", in, r, tag, want[0], want[1])
		}
	}
}
