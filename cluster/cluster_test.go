package cluster

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Ports the cluster picks are never from the ephemeral range, where outgoing
// connections could take them before the component binds.
func TestFreePortAvoidsEphemeralRange(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ip_local_port_range")
	}
	f := strings.Fields(string(data))
	low, _ := strconv.Atoi(f[0])
	high, _ := strconv.Atoi(f[1])
	for range 50 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= low && p <= high {
			t.Fatalf("port %d is in the ephemeral range %d-%d", p, low, high)
		}
	}
}
