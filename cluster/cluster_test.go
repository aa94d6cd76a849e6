package cluster

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Ports the cluster picks are never from the ephemeral range, where outgoing
// connections could take them before the component binds.
func TestPickAvoidsEphemeralRange(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ip_local_port_range")
	}
	f := strings.Fields(string(data))
	low, _ := strconv.Atoi(f[0])
	high, _ := strconv.Atoi(f[1])
	picker := newPortPicker()
	defer picker.release()
	for range 50 {
		p, err := picker.pick()
		if err != nil {
			t.Fatal(err)
		}
		if p >= low && p <= high {
			t.Fatalf("port %d is in the ephemeral range %d-%d", p, low, high)
		}
	}
}

// Two clusters starting at once never pick the same port: a picked port
// stays reserved until the picker releases it, across processes too (the
// lock is flock(2), which two opens in one process contend for as well).
func TestPickersNeverShareAPort(t *testing.T) {
	low, high := portRange()
	port, err := (&portPicker{low: low, high: high}).pick() // reserves nothing
	if err != nil {
		t.Fatal(err)
	}
	// A range of that one port, so that a second pick can only collide.
	dir := t.TempDir()
	first := &portPicker{low: port, high: port, dir: dir}
	second := &portPicker{low: port, high: port, dir: dir}
	got, err := first.pick()
	if err != nil || got != port {
		t.Fatalf("first pick = %d, %v; want %d", got, err, port)
	}
	if got, err := second.pick(); err == nil {
		t.Fatalf("second picker got port %d while the first holds it", got)
	}
	first.release()
	if got, err := second.pick(); err != nil || got != port {
		t.Fatalf("after release, second pick = %d, %v; want %d", got, err, port)
	}
	second.release()
}
