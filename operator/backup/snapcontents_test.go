package backup

import (
	"context"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// What a restore reads of the backup's snapshots before it writes
// anything: why they cannot be restored, and for another namespace the
// content whose handle a copy there points at.
func TestSnapshotContents(t *testing.T) {
	snapshot := func(ready, bound bool) client.Object {
		vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-data", Namespace: "shop"}, Status: &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(ready)}}
		if bound {
			vs.Status.BoundVolumeSnapshotContentName = ptr.To("content-1")
		}
		u, _ := unstructuredOf(vs, snapshotGVK.Kind)
		return u
	}
	content := func(handle *string) client.Object {
		c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "content-1"}, Spec: snapv1.VolumeSnapshotContentSpec{Driver: "csi.example.com"}, Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: handle}}
		u, _ := unstructuredOf(c, snapshotContentGVK.Kind)
		return u
	}
	tests := []struct {
		name    string
		objs    []client.Object
		into    string
		why     bool
		handle  string
		wantErr bool
	}{
		{name: "no snapshot", into: "shop", why: true},
		{name: "not ready", objs: []client.Object{snapshot(false, true)}, into: "shop", why: true},
		{name: "not bound", objs: []client.Object{snapshot(true, false)}, into: "staging", why: true},
		{name: "ready, same namespace: no content read", objs: []client.Object{snapshot(true, true)}, into: "shop"},
		{name: "ready, another namespace", objs: []client.Object{snapshot(true, true), content(ptr.To("h-1"))}, into: "staging", handle: "h-1"},
		{name: "a content without a handle: retried", objs: []client.Object{snapshot(true, true), content(nil)}, into: "staging", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tt.objs...).Build()
			r := NewRestoreReconciler(Options{Watched: schema.GroupVersionKind{Group: "charts.example.com", Version: "v1", Kind: "Store"}, Client: c, Reader: c})
			obj := &unstructured.Unstructured{}
			obj.SetNamespace("shop")
			run := &restoreRun{obj: obj, ns: tt.into, contents: &Contents{Snapshots: map[string]SnapshotRef{"data": {Name: "snap-data"}}}}
			got, why, err := r.snapshotContents(context.Background(), run)
			switch {
			case (err != nil) != tt.wantErr:
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			case (why != "") != tt.why:
				t.Errorf("why = %q, want one: %v", why, tt.why)
			case tt.handle != "" && (got["data"] == nil || *got["data"].Status.SnapshotHandle != tt.handle):
				t.Errorf("contents %v, want the handle %s", got, tt.handle)
			case tt.handle == "" && len(got) > 0:
				t.Errorf("contents %v, want none", got)
			}
		})
	}
}
