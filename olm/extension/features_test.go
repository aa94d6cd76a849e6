package extension

import (
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// extensionCRD is a ClusterExtension CRD whose v1 spec requires required
// and has the properties props.
func extensionCRD(served bool, required []any, props ...string) map[string]any {
	properties := map[string]any{}
	for _, p := range props {
		properties[p] = map[string]any{"type": "object"}
	}
	return map[string]any{"spec": map[string]any{"versions": []any{map[string]any{
		"name": "v1", "served": served,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"properties": map[string]any{
			"spec": map[string]any{"required": required, "properties": properties},
		}}},
	}}}}
}

func TestFeaturesOf(t *testing.T) {
	tests := []struct {
		name    string
		crd     map[string]any
		want    Features
		wantErr string
	}{
		// v1.2: serviceAccount required, no config.
		{name: "v1.2", crd: extensionCRD(true, []any{"namespace", "serviceAccount", "source"}, "namespace", "serviceAccount", "source"),
			want: Features{InstallerServiceAccount: true}},
		// v1.11 standard: serviceAccount optional and ignored.
		{name: "v1.11 standard", crd: extensionCRD(true, []any{"namespace", "source"}, "namespace", "serviceAccount", "source")},
		// v1.11 experimental: spec.config too.
		{name: "v1.11 experimental", crd: extensionCRD(true, []any{"namespace", "source"}, "config", "namespace", "serviceAccount", "source"),
			want: Features{Config: true}},
		{name: "v1 not served", crd: extensionCRD(false, nil), wantErr: "serves no version v1"},
		{name: "no versions", crd: map[string]any{}, wantErr: "serves no version v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FeaturesOf(tt.crd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FeaturesOf = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestChooseWatchNamespace(t *testing.T) {
	all := v1alpha1.InstallModeSet{v1alpha1.InstallModeTypeAllNamespaces: true, v1alpha1.InstallModeTypeOwnNamespace: false}
	own := v1alpha1.InstallModeSet{v1alpha1.InstallModeTypeOwnNamespace: true, v1alpha1.InstallModeTypeAllNamespaces: false}
	single := v1alpha1.InstallModeSet{v1alpha1.InstallModeTypeSingleNamespace: true}
	config, legacy := Features{Config: true}, LegacyFeatures
	tests := []struct {
		name      string
		modes     v1alpha1.InstallModeSet
		f         Features
		watch     string
		want      string
		wantNote  bool
		wantErr   error
		errSubstr string
	}{
		{name: "all namespaces", modes: all, f: config},
		{name: "unknown modes are left to operator-controller", f: legacy, watch: "apps", want: "apps"},
		{name: "own namespace chosen for an OwnNamespace-only CSV", modes: own, f: config, want: "team", wantNote: true},
		{name: "own namespace asked", modes: own, f: config, watch: "team", want: "team"},
		{name: "a single namespace asked", modes: single, f: config, watch: "apps", want: "apps"},
		{name: "a single namespace not supported", modes: own, f: config, watch: "apps", wantErr: ErrInstallMode, errSubstr: "--watch-namespace team"},
		{name: "SingleNamespace-only needs a namespace", modes: single, f: config, wantErr: ErrInstallMode, errSubstr: "give a namespace to watch"},
		{name: "OwnNamespace-only on a cluster without spec.config", modes: own, f: legacy, wantErr: ErrInstallMode, errSubstr: SingleOwnNamespaceGate},
		{name: "all namespaces not asked of an AllNamespaces-only CSV", modes: all, f: config, watch: "team", wantErr: ErrInstallMode, errSubstr: "supports AllNamespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := InstallOptions{Namespace: "team", WatchNamespace: tt.watch}
			got, note, err := chooseWatchNamespace(opts, tt.f, &Bundle{Name: "demo.v0.1.0", InstallModes: tt.modes})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("error = %v, want %v with %q", err, tt.wantErr, tt.errSubstr)
				}
				return
			}
			if err != nil || got != tt.want || (note != "") != tt.wantNote {
				t.Fatalf("chooseWatchNamespace = %q, %q, %v; want %q (note %v)", got, note, err, tt.want, tt.wantNote)
			}
		})
	}
}
