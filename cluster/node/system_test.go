package node

import (
	"slices"
	"testing"
)

func TestForeignPodRoutes(t *testing.T) {
	tests := []struct {
		name, routes string
		want         []string
	}{
		{name: "none"},
		{name: "the node's own", routes: "10.88.0.0/16 via 10.254.0.2 dev " + HostLink + " \n"},
		{name: "Podman's", routes: "10.88.0.0/16 dev podman0 proto kernel scope link src 10.88.0.1 \n",
			want: []string{"10.88.0.0/16 dev podman0 proto kernel scope link src 10.88.0.1"}},
		{name: "a part of it elsewhere", routes: "10.88.0.0/16 via 10.254.0.2 dev " + HostLink + "\n10.88.3.0/24 dev cni0 scope link\n",
			want: []string{"10.88.3.0/24 dev cni0 scope link"}},
		{name: "a link named like the node's", routes: "10.88.0.0/16 dev " + HostLink + "x scope link\n",
			want: []string{"10.88.0.0/16 dev " + HostLink + "x scope link"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := foreignPodRoutes(tt.routes); !slices.Equal(got, tt.want) {
				t.Errorf("foreignPodRoutes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSystemTool(t *testing.T) {
	if _, err := systemTool("no-such-tool-of-chartpilot"); err == nil {
		t.Error("a missing tool was found")
	}
	if p, err := systemTool("sh"); err != nil || p[0] != '/' {
		t.Errorf("systemTool(sh) = %q, %v: want an absolute path", p, err)
	}
}
