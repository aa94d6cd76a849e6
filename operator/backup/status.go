package backup

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
