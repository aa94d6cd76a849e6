package toolchain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// ErrNoGo is returned when the go command, which builds the components, is missing.
var ErrNoGo = errors.New("the go command is needed to build the local cluster's components")

// Options configure Ensure.
type Options struct {
	// CacheDir holds the built binaries and assets. Defaults to
	// $XDG_CACHE_HOME/chartpilot/toolchain (os.UserCacheDir).
	CacheDir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Log receives the go command's own output, every line (the packages
	// it compiles, its errors); nil keeps only the end of it, for errors.
	Log io.Writer
	// Progress, when set, is called as each go build starts and at each
	// heartbeat, from the goroutine that called Ensure: a caller that
	// shows its own progress needs neither Out's lines nor their wording.
	Progress func(Progress)
	// Go is the go command to build with. Defaults to "go" from PATH.
	Go string
	// Heartbeat is how often a long build reports that it is still going.
	// Defaults to 30s.
	Heartbeat time.Duration
	// Only limits the build to these binaries (names as in Binaries); empty
	// means all. A name that is not one of them is an error wrapping
	// ErrUnknownComponent.
	Only []string
	// Node adds the real node's components (NodeBinaries) to what is built
	// when Only is empty.
	Node bool
	// OLMv1 adds OLM v1's components (OLMv1Binaries) and CRDs to what is
	// built when Only is empty.
	OLMv1 bool
}

func (o *Options) defaults() error {
	if o.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("locating the user cache directory: %w", err)
		}
		o.CacheDir = filepath.Join(dir, "chartpilot", "toolchain")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Progress == nil {
		o.Progress = func(Progress) {}
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = 30 * time.Second
	}
	return nil
}

// Progress is where a build of the components stands: as one go build
// starts (Elapsed zero), then at each heartbeat.
type Progress struct {
	// Build counts the go builds: this one, from 1, of Builds.
	Build, Builds int
	// Group names what this go build builds from (its tools module).
	Group string
	// Building are the components this go build builds.
	Building []string
	// Left is how many components the go builds after this one build.
	Left int
	// Elapsed is the time since this go build started, Compiled the
	// packages it compiled since.
	Elapsed  time.Duration
	Compiled int
}

// Installation says where the built components are.
type Installation struct {
	// BinDir holds every binary under its plain name (etcd, kube-apiserver,
	// kubectl...): usable as envtest's KUBEBUILDER_ASSETS.
	BinDir string
	// OLMCRDs is a directory with OLM's CustomResourceDefinitions.
	OLMCRDs string
	// KwokStages is a file of kwok Stage documents (fast nodes and pods).
	KwokStages string
	// OLMChart is OLM's own Helm chart, which installs it in-cluster.
	OLMChart string
	// SnapshotCRDs is a directory with the VolumeSnapshot API's
	// CustomResourceDefinitions (with the real node's components only).
	SnapshotCRDs string
	// OLMv1CRDs is a directory with OLM v1's CustomResourceDefinitions
	// (ClusterCatalog, ClusterExtension), with OLM v1's components only.
	OLMv1CRDs string
	// Versions maps each binary name to the version of the module it was built from.
	Versions map[string]string
}

// Binary returns the path of the named binary.
func (in *Installation) Binary(name string) string { return filepath.Join(in.BinDir, name) }

// Ensure builds whatever is missing from the cache and returns the installation.
// Binaries are keyed by the tools module's versions and the Go version, so a
// version bump rebuilds and nothing else does.
func Ensure(ctx context.Context, opts Options) (*Installation, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	bins, err := selected(opts.Only, opts.Node, opts.OLMv1)
	if err != nil {
		return nil, err
	}
	mods, err := loadModules()
	if err != nil {
		return nil, err
	}
	goVersion := goRuntimeVersion()
	root := filepath.Join(opts.CacheDir, mods.key(goVersion))
	inst := &Installation{
		BinDir:     filepath.Join(root, "bin"),
		OLMCRDs:    filepath.Join(root, "olm-crds"),
		KwokStages: filepath.Join(root, "kwok-stages.yaml"),
		OLMChart:   filepath.Join(root, "olm-chart"),
		// The CSI sidecars' CRDs come with them: a kwok-only user never
		// downloads their modules.
		SnapshotCRDs: filepath.Join(root, "snapshot-crds"),
		OLMv1CRDs:    filepath.Join(root, "olmv1-crds"),
		Versions:     map[string]string{},
	}
	// Each binary is stored under its own key and linked into BinDir.
	stored := func(b Binary) string {
		return filepath.Join(opts.CacheDir, "bins", b.Name, mods.binKey(goVersion, b))
	}
	var missing []Binary
	for _, b := range bins {
		inst.Versions[b.Name] = mods.version(b)
		if !exists(stored(b)) {
			missing = append(missing, b)
		} else if err := link(stored(b), inst.Binary(b.Name)); err != nil {
			return nil, err
		}
	}
	assetsMissing := !exists(inst.OLMCRDs) || !exists(inst.KwokStages) || !exists(inst.OLMChart)
	snapshotCRDsMissing := opts.Node && !exists(inst.SnapshotCRDs)
	olmv1CRDsMissing := opts.OLMv1 && !exists(inst.OLMv1CRDs)
	if len(missing) == 0 && !assetsMissing && !snapshotCRDsMissing && !olmv1CRDsMissing {
		return inst, nil
	}

	goPath, err := exec.LookPath(opts.Go)
	if err != nil {
		return nil, fmt.Errorf("%w: %q not found in PATH", ErrNoGo, opts.Go)
	}
	src := filepath.Join(root, "src")
	for _, name := range moduleNames {
		if err := materialize(name, filepath.Join(src, name)); err != nil {
			return nil, err
		}
	}
	b := builder{goPath: goPath, src: src, out: opts.Out, log: opts.Log, progress: opts.Progress, heartbeat: opts.Heartbeat}
	if err := b.buildAll(ctx, missing, buildPlan{
		version: mods.version,
		dest:    stored,
		binDir:  inst.BinDir,
		tmpRoot: filepath.Join(opts.CacheDir, "bins"),
	}); err != nil {
		return nil, err
	}
	if assetsMissing {
		if err := b.copyAssets(ctx, inst); err != nil {
			return nil, err
		}
	}
	if snapshotCRDsMissing {
		if err := b.copySnapshotCRDs(ctx, inst); err != nil {
			return nil, err
		}
	}
	if olmv1CRDsMissing {
		if err := b.copyOLMv1CRDs(ctx, inst); err != nil {
			return nil, err
		}
	}
	return inst, nil
}

// builder runs the go command in the materialized tools modules.
type builder struct {
	goPath string
	// src holds one directory per tools module.
	src       string
	out       io.Writer
	log       io.Writer // the go command's output
	progress  func(Progress)
	heartbeat time.Duration
}

func (b builder) env() []string {
	// The module's go.sum is complete: never let the go command edit it, and
	// never let a go.work around the cache directory take over.
	return append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"), "GOWORK=off")
}

// moduleDir asks the go command where a module of the tools module tools lives.
func (b builder) moduleDir(ctx context.Context, tools, module string) (string, error) {
	cmd := exec.CommandContext(ctx, b.goPath, "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = filepath.Join(b.src, tools)
	cmd.Env = b.env()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("locating module %s: %w: %s", module, err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		// Not yet downloaded: go list -m leaves Dir empty until the module is in the cache.
		dl := exec.CommandContext(ctx, b.goPath, "mod", "download", module)
		dl.Dir, dl.Env = filepath.Join(b.src, tools), b.env()
		if out, err := dl.CombinedOutput(); err != nil {
			return "", fmt.Errorf("downloading module %s: %w: %s", module, err, strings.TrimSpace(string(out)))
		}
		return b.moduleDir(ctx, tools, module)
	}
	return dir, nil
}

// tail keeps the last n lines written to it.
type tail struct {
	n     int
	lines []string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) add(line string) {
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string { return strings.Join(t.lines, "\n") }

func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// goRuntimeVersion is the Go that built chartpilot, which the go command in
// PATH normally is too.
func goRuntimeVersion() string { return runtime.Version() }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// link makes name a symbolic link to target, replacing what was there.
func link(target, name string) error {
	if cur, err := os.Readlink(name); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".link-" + fmt.Sprint(os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", name, err)
	}
	return os.Rename(tmp, name)
}
