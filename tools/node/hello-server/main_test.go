package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestDataHandler(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("restored"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "nested"), []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	h := dataHandler(root.FS())
	tests := []struct {
		method, path string
		status       int
		body         string
	}{
		{http.MethodGet, "/data/marker", http.StatusOK, "restored"},
		{http.MethodGet, "/data/sub/nested", http.StatusOK, "deep"},
		{http.MethodHead, "/data/marker", http.StatusOK, ""},
		{http.MethodGet, "/data/missing", http.StatusNotFound, ""},
		{http.MethodGet, "/data/sub", http.StatusNotFound, ""},
		{http.MethodGet, "/data/", http.StatusNotFound, ""},
		{http.MethodGet, "/data/../etc/passwd", http.StatusNotFound, ""},
		{http.MethodGet, "/data/escape", http.StatusNotFound, ""},
		{http.MethodPut, "/data/marker", http.StatusMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if tt.body != "" && rec.Body.String() != tt.body {
				t.Errorf("body %q, want %q", rec.Body.String(), tt.body)
			}
		})
	}
}
