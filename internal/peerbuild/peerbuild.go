package peerbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/chartpilot/chartpilot/internal/flock"
)

// Options name a peer binary and what it is built from.
type Options struct {
	// Name is the binary's file name and its cache directory's prefix.
	Name string
	// Module is the directory of the Go module that pins the peer.
	Module string
	// Package is the main package to build, relative to Module or an
	// import path; "." by default.
	Package string
	// Tags are build tags.
	Tags []string
	// Keys are the files of Module whose content, with the Go version,
	// keys the cache (go.mod and go.sum by default).
	Keys []string
}

// Build returns the peer built into the user's cache, building it when no
// build of the same content is there. Test binaries of several packages
// may ask at once: one builds, the others wait for it and reuse its binary.
func Build(ctx context.Context, o Options) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s from %s: %w", o.Name, o.Module, err)
	}
	key, err := cacheKey(o)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "chartpilot", "peers", o.Name+"-"+key)
	bin := filepath.Join(dir, o.Name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := flock.Lock(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	args := []string{"build", "-o", bin + ".tmp"}
	if len(o.Tags) > 0 {
		args = append(args, "-tags", strings.Join(o.Tags, ","))
	}
	pkg := o.Package
	if pkg == "" {
		pkg = "."
	}
	cmd := exec.CommandContext(ctx, goCmd, append(args, pkg)...)
	cmd.Dir = o.Module
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(os.Stderr, "building the %s peer from %s into %s (minutes on a cold cache)\n", o.Name, o.Module, dir)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", pkg, o.Module, err, out.String())
	}
	return bin, os.Rename(bin+".tmp", bin)
}

func cacheKey(o Options) (string, error) {
	keys := o.Keys
	if len(keys) == 0 {
		keys = []string{"go.mod", "go.sum"}
	}
	h := sha256.New()
	for _, f := range keys {
		b, err := os.ReadFile(filepath.Join(o.Module, f))
		if err != nil {
			return "", fmt.Errorf("peer %s: %w", o.Name, err)
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version()))
	return hex.EncodeToString(h.Sum(nil)[:6]), nil
}
