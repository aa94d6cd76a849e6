package cluster

import "testing"

// Down removes only directories the provisioner made, whatever a PV names.
func TestUnderHostPathDir(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{HostPathDir + "/0b6f8a52-6c1e-4c7a-9d0e-1f2a3b4c5d6e", true},
		{HostPathDir + "/uuid/", true},
		{HostPathDir, false},
		{HostPathDir + "/", false},
		{HostPathDir + "/uuid/nested", false},
		{HostPathDir + "/../etc", false},
		{"/tmp/other", false},
		{"/", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := underHostPathDir(tt.path); got != tt.want {
			t.Errorf("underHostPathDir(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
