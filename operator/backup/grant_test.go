package backup

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// A restore writes into its own namespace freely, into another only when
// a grant there names its namespace exactly.
func TestGranted(t *testing.T) {
	from := func(ns ...string) api.RestoreGrantSpec {
		g := api.RestoreGrantSpec{}
		for _, n := range ns {
			g.From = append(g.From, api.RestoreGrantFrom{Namespace: n})
		}
		return g
	}
	tests := []struct {
		name     string
		from, to string
		grants   []api.RestoreGrantSpec
		want     bool
	}{
		{name: "own namespace, by default", from: "shop", to: "", want: true},
		{name: "own namespace, named", from: "shop", to: "shop", want: true},
		{name: "another namespace without a grant", from: "shop", to: "kube-system", want: false},
		{name: "a grant naming another namespace", from: "shop", to: "staging", grants: []api.RestoreGrantSpec{from("dev")}, want: false},
		{name: "a grant naming no namespace", from: "shop", to: "staging", grants: []api.RestoreGrantSpec{from()}, want: false},
		{name: "a grant naming the namespace", from: "shop", to: "staging", grants: []api.RestoreGrantSpec{from("shop")}, want: true},
		{name: "one grant of several, one entry of several", from: "shop", to: "staging", grants: []api.RestoreGrantSpec{from("dev"), from("qa", "shop")}, want: true},
		{name: "names match exactly", from: "shop", to: "staging", grants: []api.RestoreGrantSpec{from("shop-2", "Shop", "")}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := granted(tt.from, tt.to, tt.grants); got != tt.want {
				t.Errorf("granted(%q, %q, %v) = %v, want %v", tt.from, tt.to, tt.grants, got, tt.want)
			}
		})
	}
}

// checkGrant reads the grants of the namespace restored into; what keeps
// it from reading them (the kind not served, RBAC from before grants) lets
// nothing in, and the message names the grant kind to create and where.
func TestCheckGrant(t *testing.T) {
	watched := schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "Store"}
	grantKind := api.RestoreGrantKind(watched)
	grant := func(ns string, from ...string) unstructured.Unstructured {
		var list []any
		for _, f := range from {
			list = append(list, map[string]any{"namespace": f})
		}
		u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"from": list}}}
		u.SetGroupVersionKind(grantKind)
		u.SetNamespace(ns)
		return u
	}
	tests := []struct {
		name string
		// reader answers the list of grants.
		reader grantReader
		// to is the restore's target namespace (from is "shop").
		to      string
		allowed bool
		// msg are words the refusal says.
		msg     []string
		wantErr bool
	}{{
		name: "own namespace: no grant read", to: "shop", allowed: true,
		reader: grantReader{err: errors.New("must not be read")},
	}, {
		name: "a grant in the target names the namespace", to: "staging", allowed: true,
		reader: grantReader{items: []unstructured.Unstructured{grant("staging", "dev"), grant("staging", "shop")}},
	}, {
		name: "no grant", to: "kube-system",
		msg: []string{"StoreRestoreGrant", "namespace kube-system does not let Restores of namespace shop in", "{namespace: shop}", "nothing was written in kube-system"},
	}, {
		name: "a grant for others only", to: "staging",
		reader: grantReader{items: []unstructured.Unstructured{grant("staging", "dev")}},
		msg:    []string{"no StoreRestoreGrant there names it"},
	}, {
		name: "a grant without a spec grants nothing", to: "staging",
		reader: grantReader{items: []unstructured.Unstructured{{Object: map[string]any{"kind": grantKind.Kind}}}},
		msg:    []string{"no StoreRestoreGrant there names it"},
	}, {
		name: "grant kind not served", to: "staging",
		reader: grantReader{err: &meta.NoKindMatchError{GroupKind: grantKind.GroupKind()}},
		msg:    []string{"does not serve StoreRestoreGrant"},
	}, {
		name: "the operator may not list grants", to: "staging",
		reader: grantReader{err: apierrors.NewForbidden(schema.GroupResource{Group: watched.Group, Resource: "storerestoregrants"}, "", errors.New("RBAC"))},
		msg:    []string{"may not list StoreRestoreGrants"},
	}, {
		name: "the API server away: retried", to: "staging",
		reader: grantReader{err: apierrors.NewServiceUnavailable("away")}, wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRestoreReconciler(Options{Watched: watched, Reader: &tt.reader})
			why, err := r.checkGrant(context.Background(), "shop", tt.to)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if (why == "") != tt.allowed {
				t.Fatalf("refusal %q, want allowed: %v", why, tt.allowed)
			}
			for _, w := range tt.msg {
				if !strings.Contains(why, w) {
					t.Errorf("refusal %q does not say %q", why, w)
				}
			}
			if tt.reader.listed != "" && tt.reader.listed != tt.to {
				t.Errorf("grants listed in %q, want %q", tt.reader.listed, tt.to)
			}
		})
	}
}

// grantReader lists the given grants, or fails with err.
type grantReader struct {
	items  []unstructured.Unstructured
	err    error
	listed string
}

func (r *grantReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not read")
}

func (r *grantReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	r.listed = o.Namespace
	if r.err != nil {
		return r.err
	}
	list.(*unstructured.UnstructuredList).Items = r.items
	return nil
}
