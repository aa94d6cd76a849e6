package olm_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// ObserveCatalog asks a READY CatalogSource's registry, at its address, for
// its packages, and Diagnose says whether the package is among them.
func TestObserveCatalogAtAddress(t *testing.T) {
	serving := olmtest.Serve(t, olmtest.Catalog(t, olmtest.Bundle{Package: "present", Version: "0.1.0"}))
	closed := closedAddress(t)
	tests := []struct {
		name, pkg, address, state string
		// wantPackages is what ObserveCatalog learns; nil means not asked
		// or not answered.
		wantPackages []string
		// wantError says the registry could not be asked.
		wantError bool
		severity  olm.Severity
		message   string
	}{
		{name: "serves the package", pkg: "present", address: serving, state: "READY",
			wantPackages: []string{"present"}, severity: olm.Pass, message: "serves package present"},
		{name: "serves other packages", pkg: "absent", address: serving, state: "READY",
			wantPackages: []string{"present"}, severity: olm.Fail, message: "serves no package absent (it serves present)"},
		{name: "not READY: not asked", pkg: "present", address: serving, state: "TRANSIENT_FAILURE",
			severity: olm.Fail, message: "OLM cannot reach the registry"},
		{name: "registry gone since OLM looked", pkg: "present", address: closed, state: "READY",
			wantError: true, severity: olm.Pass, message: "its packages could not be listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &olm.Observed{Package: tt.pkg, Namespace: "ns", CatalogSource: &v1alpha1.CatalogSource{
				ObjectMeta: metav1.ObjectMeta{Name: "cat", Namespace: "ns"},
				Spec:       v1alpha1.CatalogSourceSpec{SourceType: v1alpha1.SourceTypeGrpc, Address: tt.address},
				Status:     v1alpha1.CatalogSourceStatus{GRPCConnectionState: &v1alpha1.GRPCConnectionState{LastObservedState: tt.state}},
			}, Subscription: &v1alpha1.Subscription{
				ObjectMeta: metav1.ObjectMeta{Name: tt.pkg, Namespace: "ns"},
				Spec:       &v1alpha1.SubscriptionSpec{Package: tt.pkg, CatalogSource: "cat", CatalogSourceNamespace: "ns"},
			}}
			olm.ObserveCatalog(context.Background(), nil, o)
			var got []string
			if o.Catalog != nil {
				got = o.Catalog.Packages
			}
			if !slices.Equal(got, tt.wantPackages) || (o.CatalogError != "") != tt.wantError {
				t.Fatalf("catalog %v, error %q; want %v, error %v", got, o.CatalogError, tt.wantPackages, tt.wantError)
			}
			for _, f := range olm.Diagnose(o) {
				if f.Check != olm.CheckCatalogSource {
					continue
				}
				if f.Severity != tt.severity || !strings.Contains(f.Message, tt.message) {
					t.Errorf("finding %+v, want %s with %q", f, tt.severity, tt.message)
				}
			}
		})
	}
}

// closedAddress is a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
