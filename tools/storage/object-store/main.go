// Command object-store is the local cluster's S3-compatible object store:
// gofakes3 with its filesystem backend, persisted under a directory, behind
// a check of each request's AWS Signature Version 4 against one pair of
// credentials (gofakes3 itself checks no signature, so without it anyone
// who reaches the port could read and write), with multipart uploads kept
// on disk rather than in memory (multipart.go).
//
// The credentials come from the environment, as the AWS tools read them:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. GET /-/healthz answers "ok"
// without them (no bucket name starts with "-").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
)

// healthPath answers without credentials.
const healthPath = "/-/healthz"

func main() {
	root := flag.String("root", "", "the directory that holds the buckets and their metadata")
	listen := flag.String("listen", "127.0.0.1:9000", "comma-separated addresses to listen on")
	flag.Parse()
	creds := credentials{accessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), secret: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *root, strings.Split(*listen, ","), creds); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, root string, addrs []string, creds credentials) error {
	if creds.accessKeyID == "" || creds.secret == "" {
		return errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
	}
	h, err := handler(root, creds)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, len(addrs))
	for _, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		go func() { errs <- srv.Serve(l) }()
	}
	log.Printf("serving S3 on %s, data in %s", strings.Join(addrs, ", "), root)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// handler is gofakes3 on a filesystem backend under root, for signed
// requests only.
func handler(root string, creds credentials) (http.Handler, error) {
	if root == "" {
		return nil, errors.New("-root is required")
	}
	fs, err := s3afero.FsPath(root, s3afero.FsPathCreateAll)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", root, err)
	}
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", root, err)
	}
	up := &uploads{dir: filepath.Join(root, "uploads"), backend: backend}
	s3 := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.GlobalLog(gofakes3.LogErr, gofakes3.LogWarn))).Server()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == healthPath {
			fmt.Fprintln(w, "ok")
			return
		}
		if err := creds.verify(r, time.Now()); err != nil {
			writeError(w, r, err)
			return
		}
		if err := dechunk(r); err != nil {
			writeError(w, r, &s3Error{http.StatusBadRequest, "IncompleteBody", err.Error()})
			return
		}
		if up.serve(w, r) {
			return
		}
		s3.ServeHTTP(w, r)
	}), nil
}

// s3Error is an error answered as S3 does, with its status and code.
type s3Error struct {
	status int
	code   string
	msg    string
}

func (e *s3Error) Error() string { return e.msg }

// writeError answers with err in S3's XML error: a signature's or an
// s3Error's code, else InternalError.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code := http.StatusInternalServerError, "InternalError"
	var se *signatureError
	var s3e *s3Error
	switch {
	case errors.As(err, &se):
		status, code = http.StatusForbidden, se.code
	case errors.As(err, &s3e):
		status, code = s3e.status, s3e.code
	}
	log.Printf("%s %s: %s: %v", r.Method, r.URL.Path, code, err)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource></Error>",
		code, xmlEscape(err.Error()), xmlEscape(r.URL.Path))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
