package operator

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A read refused a connection waits for the server to be ready and goes
// through once it is; a write fails at once, as it would without the gate.
func TestGatedTransport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the server is away

	var probes atomic.Int32
	up := make(chan struct{})
	gate := &serverGate{
		ready: func(context.Context) error {
			if probes.Add(1) == 3 {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Error(err)
					return err
				}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
				go func() { _ = srv.Serve(ln) }()
				t.Cleanup(func() { _ = srv.Close() })
				close(up)
			}
			select {
			case <-up:
				return nil
			default:
				return context.DeadlineExceeded
			}
		},
		poll: 10 * time.Millisecond, outage: time.Minute,
	}
	rt := gatedTransport{next: &http.Transport{}, gate: gate}

	post, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("{}"))
	if _, err := rt.RoundTrip(post); err == nil {
		t.Fatal("a write to an absent server succeeded")
	}
	if probes.Load() != 0 {
		t.Errorf("a write waited for the server")
	}
	get, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	resp, err := rt.RoundTrip(get)
	if err != nil {
		t.Fatalf("a read across the outage: %v", err)
	}
	resp.Body.Close()
	if probes.Load() < 3 {
		t.Errorf("the read went through after %d probes, before the server was back", probes.Load())
	}

	// A read whose context ends while the server is away gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	gone := &serverGate{ready: func(context.Context) error { return context.DeadlineExceeded }, poll: 10 * time.Millisecond, outage: time.Minute}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	addr2 := ln2.Addr().String()
	ln2.Close()
	get2, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr2+"/", nil)
	if _, err := (gatedTransport{next: &http.Transport{}, gate: gone}).RoundTrip(get2); err == nil {
		t.Error("a read succeeded with no server")
	}
}
