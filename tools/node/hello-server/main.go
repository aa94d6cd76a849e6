// Command hello-server is the example chart's operand: it answers every
// request with a greeting, and /readyz once it serves, so that a pod's
// readiness means that a process really answers. With DATA_DIR set (the
// chart's volume) it serves the files there, read-only, at /data/NAME: a
// test reads through the Service what it put in the volume.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// dataPrefix is where the files of DATA_DIR are served.
const dataPrefix = "/data/"

func main() {
	addr := ":" + envOr("PORT", "8080")
	greeting := envOr("GREETING", "hello")
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, greeting) })
	if dir := os.Getenv("DATA_DIR"); dir != "" {
		root, err := os.OpenRoot(dir)
		if err != nil {
			log.Fatalf("DATA_DIR: %v", err)
		}
		defer root.Close()
		mux.Handle(dataPrefix, dataHandler(root.FS()))
		log.Printf("serving the files of %s at %s", dir, dataPrefix)
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("serving %q on %s", greeting, addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// dataHandler serves the regular files of fsys, GET and HEAD only; no
// listing. fsys is rooted (os.Root): no name or link leads out of it.
func dataHandler(fsys fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, dataPrefix)
		if !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		f, err := fsys.Open(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, st.Name(), st.ModTime(), f.(readSeeker))
	})
}

// readSeeker is what the files of an os.Root's FS are.
type readSeeker interface {
	Read([]byte) (int, error)
	Seek(int64, int) (int64, error)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
