package mover

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// A restore into another namespace cannot mount the claim that holds the
// archive: a pod of the backup's namespace serves the one archive file
// once (ServeOnce) to the restore's mover in the other namespace, which
// fetches and extracts it as it streams (ExtractHTTP). A random token,
// passed to both by Secrets, is asked of each request.

// ServeOptions say what ServeOnce serves, where, to whom and how long.
type ServeOptions struct {
	// File is the archive.
	File string
	// Addr is host:port to listen on: the pod's own IP.
	Addr string
	// Token is asked as "Authorization: Bearer <token>".
	Token string
	// Timeout ends the server when nobody fetched the archive by then.
	Timeout time.Duration
	// listening, when set, learns the address (tests listen on port 0).
	listening func(net.Addr)
}

// ErrNotFetched means nobody fetched the archive within the timeout.
var ErrNotFetched = errors.New("nobody fetched the archive")

// ServeOnce serves opts.File to the first request that carries the token
// and reads it whole, then returns: the size sent. Requests without the
// token are refused and change nothing; one transfer runs at a time.
func ServeOnce(ctx context.Context, opts ServeOptions) (Result, error) {
	if opts.Token == "" {
		return Result{}, errors.New("no token to ask of the fetcher")
	}
	if _, err := os.Stat(opts.File); err != nil {
		return Result{}, fmt.Errorf("the archive: %w", err)
	}
	l, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return Result{}, fmt.Errorf("listening on %s: %w", opts.Addr, err)
	}
	if opts.listening != nil {
		opts.listening(l.Addr())
	}
	h := &onceHandler{file: opts.File, token: []byte("Bearer " + opts.Token), done: make(chan int64, 1)}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	defer srv.Close()
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	select {
	case n := <-h.done:
		// The handler has written the file but not yet returned: Shutdown
		// waits until the response has left before the deferred Close.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		return Result{Size: n, Files: 1}, nil
	case err := <-errs:
		return Result{}, fmt.Errorf("serving the archive: %w", err)
	case <-timer.C:
		return Result{}, fmt.Errorf("%w within %s", ErrNotFetched, opts.Timeout)
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// onceHandler sends the file to an authorized request, one at a time,
// and reports the first complete transfer on done.
type onceHandler struct {
	file  string
	token []byte
	busy  sync.Mutex
	sent  bool
	done  chan int64
}

func (h *onceHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), h.token) != 1 {
		http.Error(w, "a valid token is required", http.StatusForbidden)
		return
	}
	if !h.busy.TryLock() {
		http.Error(w, "a transfer is running", http.StatusConflict)
		return
	}
	defer h.busy.Unlock()
	if h.sent {
		http.Error(w, "the archive was served already", http.StatusGone)
		return
	}
	f, err := os.Open(h.file)
	if err != nil {
		http.Error(w, "opening the archive", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		http.Error(w, "reading the archive", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	n, err := io.Copy(w, f)
	if err != nil || n != info.Size() {
		return // the fetcher went away: it may ask again
	}
	h.sent = true
	h.done <- n
}

// fetchWait is how long a fetcher tries to reach a server that is not
// listening yet (its pod has an address a moment before its process).
var fetchWait = time.Minute

// ExtractHTTP fetches the archive a ServeOnce serves at url with the
// token and extracts it under dir as it streams.
func ExtractHTTP(ctx context.Context, url, token, dir string) (Result, error) {
	if err := waitWritable(dir); err != nil {
		return Result{}, fmt.Errorf("the volume %s: %w", dir, err)
	}
	resp, err := fetch(ctx, url, token)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	res, err := Extract(resp.Body, dir)
	if err != nil {
		return res, fmt.Errorf("%s: %w", url, err)
	}
	if resp.ContentLength >= 0 && res.Size != resp.ContentLength {
		return res, fmt.Errorf("%s: read %d bytes of %d", url, res.Size, resp.ContentLength)
	}
	return res, nil
}

// fetch asks url for the archive, trying again while nothing listens.
func fetch(ctx context.Context, url, token string) (*http.Response, error) {
	deadline := time.Now().Add(fetchWait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		switch {
		case err == nil && resp.StatusCode == http.StatusOK:
			return resp, nil
		case err == nil:
			resp.Body.Close()
			return nil, fmt.Errorf("fetching %s: %s", url, resp.Status)
		case time.Now().After(deadline) || ctx.Err() != nil:
			return nil, fmt.Errorf("fetching %s: %w", url, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
