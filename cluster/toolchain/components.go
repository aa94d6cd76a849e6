package toolchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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
}

const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
	kwokModule       = "sigs.k8s.io/kwok"
	olmModule        = "github.com/operator-framework/operator-lifecycle-manager"
)

// Binaries lists every component in build order: the API server's pieces first,
// so that envtest-only users get theirs soonest.
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
	}
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

// selected are the binaries named in only, in build order; empty means all.
// A name that is none of them is an error listing the known ones.
func selected(only []string) ([]Binary, error) {
	all := Binaries()
	if len(only) == 0 {
		return all, nil
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
	olmDir, err := b.moduleDir(ctx, olmModule)
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

	kwokDir, err := b.moduleDir(ctx, kwokModule)
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
