package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		argv    []string
		want    options
		args    []string
		wantErr bool
	}{
		{[]string{"-Rv", "/bin/cpb", "/util/cpb"}, options{true, true}, []string{"/bin/cpb", "/util/cpb"}, false},
		{[]string{"-R", "-v", "a", "b"}, options{true, true}, []string{"a", "b"}, false},
		{[]string{"a", "-v"}, options{}, []string{"a", "-v"}, false},
		{[]string{"--", "-a", "b"}, options{}, []string{"-a", "b"}, false},
		{[]string{"-x", "a", "b"}, options{}, nil, true},
	}
	for _, tt := range tests {
		o, args, err := parse(tt.argv)
		if (err != nil) != tt.wantErr || o != tt.want || !slices.Equal(args, tt.args) {
			t.Errorf("parse(%q) = %+v, %q, %v", tt.argv, o, args, err)
		}
	}
}

// cp -Rv of a file into a directory, as OLM's unpack Job runs it.
func TestCopyIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cpb")
	if err := os.WriteFile(src, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "util")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyPath(src, target(src, dst, false), true, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "cpb"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("copied file: %v, %v", fi, err)
	}
}
