package backup

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// fromObject reads spec and status of a Backup or Restore.
func fromObject(obj *unstructured.Unstructured, spec, status any) error {
	if m, ok := obj.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, spec); err != nil {
			return fmt.Errorf("reading the spec of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if m, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, status); err != nil {
			return fmt.Errorf("reading the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// read reads a Backup or Restore. One still in progress (or being
// deleted) is read again from the API server: its steps act on what its
// status says, and a status read back stale from the cache would redo a
// step whose evidence is gone (a mover pod deleted once its result was
// written, a served archive already fetched).
func (o *Options) read(ctx context.Context, key client.ObjectKey, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := o.Client.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if api.Phase(phase).Done() && obj.GetDeletionTimestamp() == nil {
		return obj, nil
	}
	if err := o.Reader.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// writeStatus writes st when it differs from the object's.
func writeStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured, st any) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(obj.Object["status"], m) {
		return nil
	}
	obj = obj.DeepCopy()
	obj.Object["status"] = m
	if err := c.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("writing the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// ownerRef makes obj the controller of what a backup or restore creates,
// so that deleting it deletes them.
func ownerRef(obj *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}
}
