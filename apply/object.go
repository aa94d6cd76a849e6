package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Outcome is what applying one object did to it.
type Outcome string

const (
	Created    Outcome = "created"
	Configured Outcome = "configured"
	Unchanged  Outcome = "unchanged"
)

// Object applies u through c with server-side apply as manager, forcing
// ownership of conflicting fields as `kubectl apply --server-side
// --force-conflicts` does, and says what that did. The object is read
// before and after: an apply answers alike whether it changed anything or
// not. u's namespace must be set for a namespaced kind.
func Object(ctx context.Context, c client.Client, u *unstructured.Unstructured, manager string) (Outcome, error) {
	before, err := read(ctx, c, u)
	if err != nil {
		return "", err
	}
	applied, err := jsonCopy(u)
	if err != nil {
		return "", err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying %s %s: %w", u.GetKind(), objectName(u), err)
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), after); err != nil {
		return "", fmt.Errorf("reading %s %s: %w", u.GetKind(), objectName(u), err)
	}
	return outcome(before, after, u), nil
}

// outcome compares an object before (nil: it did not exist) and after an
// apply of want.
func outcome(before, after, want *unstructured.Unstructured) Outcome {
	if before == nil {
		return Created
	}
	if before.GetGeneration() == 0 {
		// No spec generation (RBAC, ServiceAccounts, ConfigMaps,
		// Namespaces): what the object holds counts, not its
		// resourceVersion or managed fields, which an apply that changes
		// nothing may still move, nor its status, which is not ours.
		if !reflect.DeepEqual(content(before), content(after)) {
			return Configured
		}
		return Unchanged
	}
	// The generation moves with the spec only: a controller's status
	// writes, which move the resourceVersion all the time, do not count;
	// labels and annotations move no generation, so the ones applied
	// count when they were not all there before (OLM adds labels of its
	// own to a Subscription, which a resourceVersion would count).
	if before.GetGeneration() != after.GetGeneration() ||
		!hasAll(before.GetLabels(), want.GetLabels()) || !hasAll(before.GetAnnotations(), want.GetAnnotations()) {
		return Configured
	}
	return Unchanged
}

// content is u without what the API server keeps of its own.
func content(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range [][]string{{"metadata", "resourceVersion"}, {"metadata", "managedFields"}, {"status"}} {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	return c.Object
}

// hasAll says whether have holds every entry of want.
func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// jsonCopy copies u through JSON: what a renderer built (kustomize's
// objects hold Go ints) has no DeepCopy, which knows JSON's types only.
func jsonCopy(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", u.GetKind(), objectName(u), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", u.GetKind(), objectName(u), err)
	}
	return out, nil
}

// read gets the object u names; nil when it does not exist.
func read(ctx context.Context, c client.Client, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	switch err := c.Get(ctx, client.ObjectKeyFromObject(u), obj); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", u.GetKind(), objectName(u), err)
	}
	return obj, nil
}

// objectName is namespace/name, or name for a cluster-scoped object.
func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
