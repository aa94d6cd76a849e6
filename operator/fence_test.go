package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// A term's fence lets requests through until it closes; closing cancels
// those in flight (a write the server is still busy with, a watch's
// stream), returns once they have, and refuses every later one.
func TestFence(t *testing.T) {
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			entered <- struct{}{}
			<-r.Context().Done() // a request the server has not answered
		case "/stream":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	f := newFence()
	hc, err := rest.HTTPClientFor(f.wrap(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		return hc.Do(req)
	}

	resp, err := get(t.Context(), "/")
	if err != nil {
		t.Fatalf("a request of an open term: %v", err)
	}
	resp.Body.Close()
	stream, err := get(t.Context(), "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	slow := make(chan error, 1)
	go func() {
		resp, err := get(t.Context(), "/slow")
		if err == nil {
			resp.Body.Close()
		}
		slow <- err
	}()
	<-entered

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.close(ctx); err != nil {
		t.Fatalf("close did not drain: %v", err)
	}
	select {
	case err := <-slow:
		if err == nil {
			t.Error("the request in flight was answered after the term ended")
		}
	case <-time.After(5 * time.Second):
		t.Error("the request in flight was not cancelled")
	}
	if _, err := io.ReadAll(stream.Body); err == nil {
		t.Error("a stream of the ended term still reads")
	}
	if _, err := get(t.Context(), "/"); !errors.Is(err, errFenced) {
		t.Errorf("a request after the term: %v, want %v", err, errFenced)
	}
}
