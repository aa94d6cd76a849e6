package toolchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// Binary is one component of the local cluster and the package it is built from.
type Binary struct {
	// Name is the file name in the bin directory.
	Name string
	// Package is the main package to build.
	Package string
	// Module is the module that package belongs to; its version keys the cache.
	Module string
	// Tools is the tools module that builds it: clusterModule when empty,
	// nodeModule for the container runtime and what goes with it,
	// storageModule for the cluster's storage, csiModule for its CSI
	// storage, olmv1Module for OLM v1.
	Tools string
	// Tags are build tags.
	Tags []string
	// CGO builds with cgo (runc needs it); every other binary is static, so
	// that the same file runs on the host and in an image without a libc.
	CGO bool
	// Overlay replaces files of Module (paths in it) with files of the
	// tools module (paths in it), as go build -overlay does.
	Overlay map[string]string
}

// source is the tools module the binary is built from.
func (b Binary) source() string {
	if b.Tools == "" {
		return clusterModule
	}
	return b.Tools
}

const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
	kwokModule       = "sigs.k8s.io/kwok"
	olmModule        = "github.com/operator-framework/operator-lifecycle-manager"
	registryModule   = "github.com/operator-framework/operator-registry"
	containerdModule = "github.com/containerd/containerd/v2"
	runcModule       = "github.com/opencontainers/runc"
	cniModule        = "github.com/containernetworking/plugins"
	corednsModule    = "github.com/coredns/coredns"
	distribution     = "github.com/distribution/distribution/v3"
	gofakes3Module   = "github.com/johannesboyne/gofakes3"
	// nodeToolsModule holds our own small mains (see tools/node).
	nodeToolsModule = "github.com/chartpilot/chartpilot/tools/node"
	// storageToolsModule holds the storage's mains (see tools/storage).
	storageToolsModule = "github.com/chartpilot/chartpilot/tools/storage"
	// csiToolsModule holds the CSI driver and pins the sidecars (see tools/csi).
	csiToolsModule    = "github.com/chartpilot/chartpilot/tools/csi"
	provisionerModule = "github.com/kubernetes-csi/external-provisioner/v6"
	snapshotterModule = "github.com/kubernetes-csi/external-snapshotter/v8"
	snapshotClientMod = "github.com/kubernetes-csi/external-snapshotter/client/v8"
	// operatorControllerModule is OLM v1: catalogd and operator-controller.
	operatorControllerModule = "github.com/operator-framework/operator-controller"
)

// Binaries lists the components of a cluster with a kwok node, in build
// order: the API server's pieces first, so that envtest-only users get theirs
// soonest.
func Binaries() []Binary {
	return []Binary{
		{Name: "etcd", Package: etcdModule, Module: etcdModule},
		{Name: "kube-apiserver", Package: kubernetesModule + "/cmd/kube-apiserver", Module: kubernetesModule},
		{Name: "kubectl", Package: kubernetesModule + "/cmd/kubectl", Module: kubernetesModule},
		{Name: "kube-controller-manager", Package: kubernetesModule + "/cmd/kube-controller-manager", Module: kubernetesModule},
		{Name: "kube-scheduler", Package: kubernetesModule + "/cmd/kube-scheduler", Module: kubernetesModule},
		{Name: "kwok", Package: kwokModule + "/cmd/kwok", Module: kwokModule},
		{Name: "olm", Package: olmModule + "/cmd/olm", Module: olmModule},
		{Name: "catalog", Package: olmModule + "/cmd/catalog", Module: olmModule},
		{Name: "object-store", Package: storageToolsModule + "/object-store", Module: gofakes3Module, Tools: storageModule},
	}
}

// NodeBinaries lists what a real node adds: the node agents, the container
// runtime, CNI plugins, DNS, the registry, and what the images hold.
func NodeBinaries() []Binary {
	node := func(name, pkg, mod string) Binary {
		return Binary{Name: name, Package: pkg, Module: mod, Tools: nodeModule}
	}
	storage := func(name string) Binary {
		return Binary{Name: name, Package: storageToolsModule + "/" + name, Module: storageToolsModule, Tools: storageModule}
	}
	runc := node("runc", runcModule, runcModule)
	runc.CGO, runc.Tags = true, []string{"seccomp"}
	return []Binary{
		{Name: "kubelet", Package: kubernetesModule + "/cmd/kubelet", Module: kubernetesModule},
		{Name: "kube-proxy", Package: kubernetesModule + "/cmd/kube-proxy", Module: kubernetesModule},
		{Name: "cpb", Package: olmModule + "/util/cpb", Module: olmModule},
		{Name: "opm", Package: registryModule + "/cmd/opm", Module: registryModule, Tags: []string{"json1", "containers_image_openpgp"}},
		node("containerd", containerdModule+"/cmd/containerd", containerdModule),
		node("containerd-shim-runc-v2", containerdModule+"/cmd/containerd-shim-runc-v2", containerdModule),
		runc,
		node("bridge", cniModule+"/plugins/main/bridge", cniModule),
		node("host-local", cniModule+"/plugins/ipam/host-local", cniModule),
		node("loopback", cniModule+"/plugins/main/loopback", cniModule),
		node("portmap", cniModule+"/plugins/meta/portmap", cniModule),
		node("coredns", nodeToolsModule+"/coredns", corednsModule),
		node("registry", nodeToolsModule+"/registry", distribution),
		node("pause", nodeToolsModule+"/pause", nodeToolsModule),
		node("cp", nodeToolsModule+"/cp", nodeToolsModule),
		node("grpc_health_probe", nodeToolsModule+"/grpc_health_probe", nodeToolsModule),
		node("hello-server", nodeToolsModule+"/hello-server", nodeToolsModule),
		storage("volume-permissions"),
		{Name: "hostpath-csi", Package: csiToolsModule + "/hostpath-csi", Module: csiToolsModule, Tools: csiModule},
		{Name: "csi-provisioner", Package: provisionerModule + "/cmd/csi-provisioner", Module: provisionerModule, Tools: csiModule},
		{Name: "csi-snapshotter", Package: snapshotterModule + "/cmd/csi-snapshotter", Module: snapshotterModule, Tools: csiModule},
		{Name: "snapshot-controller", Package: snapshotterModule + "/cmd/snapshot-controller", Module: snapshotterModule, Tools: csiModule},
	}
}

// olmv1Overlay lets OLM v1's processes run on the host: upstream learns
// its ServiceAccount only from the token mounted into a pod (see
// tools/olmv1/overlay/sa).
var olmv1Overlay = map[string]string{"internal/shared/util/sa/serviceaccount.go": "overlay/sa/serviceaccount.go"}

// OLMv1Binaries are OLM v1's components: catalogd, which unpacks and
// serves ClusterCatalogs, and operator-controller, which installs
// ClusterExtensions. Built as upstream builds them: static, with the
// containers/image signature code in Go (no gpgme).
func OLMv1Binaries() []Binary {
	olmv1 := func(name string) Binary {
		return Binary{Name: name, Package: operatorControllerModule + "/cmd/" + name, Module: operatorControllerModule,
			Tools: olmv1Module, Tags: []string{"containers_image_openpgp"}, Overlay: olmv1Overlay}
	}
	return []Binary{olmv1("catalogd"), olmv1("operator-controller")}
}

// NodeBinaryNames are the components that only a real node needs.
func NodeBinaryNames() []string {
	var names []string
	for _, b := range NodeBinaries() {
		names = append(names, b.Name)
	}
	return names
}

func allBinaries() []Binary {
	return slices.Concat(Binaries(), NodeBinaries(), OLMv1Binaries())
}

// versionLDFlags stamps the Kubernetes binaries with their release, as the
// Kubernetes build does: built from the module they would report
// v0.0.0-master, which OLM cannot compare with a CSV's minKubeVersion.
func versionLDFlags(module, version string) []string {
	if module != kubernetesModule {
		return nil
	}
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+version,
			"-X", pkg+".gitMajor="+major,
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean",
		)
	}
	return flags
}

// EnvtestBinaries are the ones envtest needs for an API server alone.
var EnvtestBinaries = []string{"etcd", "kube-apiserver", "kubectl"}

// ErrUnknownComponent is returned for a name in Options.Only that is not
// one of Binaries.
var ErrUnknownComponent = errors.New("unknown component")

// selected are the binaries named in only, in build order; empty means those
// of a cluster with a kwok node, the real node's too when node is set, and
// OLM v1's when olmv1 is set. A name that is none of them is an error
// listing the known ones.
func selected(only []string, node, olmv1 bool) ([]Binary, error) {
	all := allBinaries()
	if len(only) == 0 {
		bins := Binaries()
		if node {
			bins = append(bins, NodeBinaries()...)
		}
		if olmv1 {
			bins = append(bins, OLMv1Binaries()...)
		}
		return bins, nil
	}
	var unknown []string
	for _, name := range only {
		if !slices.ContainsFunc(all, func(b Binary) bool { return b.Name == name }) {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		names := make([]string, 0, len(all))
		for _, b := range all {
			names = append(names, b.Name)
		}
		return nil, fmt.Errorf("%w %s: the components are %s", ErrUnknownComponent, strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	var out []Binary
	for _, b := range all {
		if slices.Contains(only, b.Name) {
			out = append(out, b)
		}
	}
	return out, nil
}

// kwokStageDirs are the kwok stages the local cluster runs: nodes become Ready
// and keep heartbeating, pods become Running/Ready at once.
var kwokStageDirs = []string{"node/fast", "node/heartbeat", "pod/fast"}

// copyAssets copies OLM's CRDs and kwok's stages out of the module cache.
func (b builder) copyAssets(ctx context.Context, inst *Installation) error {
	olmDir, err := b.moduleDir(ctx, clusterModule, olmModule)
	if err != nil {
		return err
	}
	crds, err := filepath.Glob(filepath.Join(olmDir, "deploy", "chart", "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return fmt.Errorf("no CRDs under %s/deploy/chart/crds", olmDir)
	}
	tmpDir := inst.OLMCRDs + ".tmp"
	if err := os.RemoveAll(tmpDir); err != nil {
		return err
	}
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading OLM CRD: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmpDir, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(inst.OLMCRDs); err != nil {
		return err
	}
	if err := os.Rename(tmpDir, inst.OLMCRDs); err != nil {
		return fmt.Errorf("installing OLM CRDs: %w", err)
	}
	if err := copyTree(filepath.Join(olmDir, "deploy", "chart"), inst.OLMChart); err != nil {
		return fmt.Errorf("copying OLM's chart: %w", err)
	}

	kwokDir, err := b.moduleDir(ctx, clusterModule, kwokModule)
	if err != nil {
		return err
	}
	var stages bytes.Buffer
	for _, d := range kwokStageDirs {
		files, err := filepath.Glob(filepath.Join(kwokDir, "kustomize", "stage", d, "*.yaml"))
		if err != nil {
			return err
		}
		sort.Strings(files)
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("reading kwok stage: %w", err)
			}
			stages.WriteString("---\n")
			stages.Write(bytes.TrimSpace(data))
			stages.WriteString("\n")
		}
	}
	if !strings.Contains(stages.String(), "kind: Stage") {
		return fmt.Errorf("no kwok stages found under %s/kustomize/stage", kwokDir)
	}
	return atomicfile.WriteFile(inst.KwokStages, stages.Bytes(), 0o644)
}

// snapshotCRDFiles are the snapshot API's CRDs in the snapshotter's client
// module (the group snapshot ones are left out: the controller runs
// without that feature).
var snapshotCRDFiles = []string{
	"snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
	"snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
	"snapshot.storage.k8s.io_volumesnapshots.yaml",
}

// copySnapshotCRDs copies the VolumeSnapshot CRDs out of the module cache.
func (b builder) copySnapshotCRDs(ctx context.Context, inst *Installation) error {
	dir, err := b.moduleDir(ctx, csiModule, snapshotClientMod)
	if err != nil {
		return err
	}
	tmp := inst.SnapshotCRDs + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range snapshotCRDFiles {
		data, err := os.ReadFile(filepath.Join(dir, "config", "crd", f))
		if err != nil {
			return fmt.Errorf("reading the snapshot CRD: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(inst.SnapshotCRDs); err != nil {
		return err
	}
	return os.Rename(tmp, inst.SnapshotCRDs)
}

// olmv1CRDFiles are OLM v1's CRDs in operator-controller's module, as its
// Helm chart holds them: the experimental ones, whose ClusterExtension has
// spec.config (watchNamespace, behind SingleOwnNamespaceInstallSupport,
// which the cluster turns on).
var olmv1CRDFiles = []string{
	"helm/olmv1/base/catalogd/crd/experimental/olm.operatorframework.io_clustercatalogs.yaml",
	"helm/olmv1/base/operator-controller/crd/experimental/olm.operatorframework.io_clusterextensions.yaml",
}

// copyOLMv1CRDs copies OLM v1's CRDs out of the module cache.
func (b builder) copyOLMv1CRDs(ctx context.Context, inst *Installation) error {
	dir, err := b.moduleDir(ctx, olmv1Module, operatorControllerModule)
	if err != nil {
		return err
	}
	return copyFiles(dir, olmv1CRDFiles, inst.OLMv1CRDs)
}

// copyFiles copies the files (paths under src) into the directory dst,
// each under its base name, replacing dst whole.
func copyFiles(src string, files []string, dst string) error {
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(f)))
		if err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, path.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// copyTree copies the regular files under src to dst, replacing dst whole:
// files in the module cache are read-only, the copies are not.
func copyTree(src, dst string) error {
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(tmp, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), data, 0o644)
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
