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
// --force-conflicts` does, and says what that did. An apply answers alike
// whether it changed anything or not, so the object is read just before it
// and compared with the apply's answer (see outcome). u's namespace must
// be set for a namespaced kind.
func Object(ctx context.Context, c client.Client, u *unstructured.Unstructured, manager string) (Outcome, error) {
	before, err := read(ctx, c, u)
	if err != nil {
		return "", err
	}
	applied, err := jsonCopy(u)
	if err != nil {
		return "", err
	}
	// The answer, the object as stored, is decoded into applied.
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying %s %s: %w", u.GetKind(), objectName(u), err)
	}
	return outcome(before, applied, u), nil
}

// outcome says what an apply of want did, from the object before it (nil:
// it did not exist) and after. The resourceVersion tells first: the API
// server writes nothing, and keeps it, when an apply changes nothing. A
// write with nothing to show is not a change: one of managedFields only
// (the apply after one that owned no field yet records the fields' first
// owner), of status, or of labels and annotations that others added in
// between (OLM labels a Subscription as soon as it exists). Any other
// write of someone else's in between counts as the apply's.
func outcome(before, after, want *unstructured.Unstructured) Outcome {
	switch {
	case before == nil:
		return Created
	case before.GetResourceVersion() == after.GetResourceVersion(),
		reflect.DeepEqual(content(before, before, want), content(after, before, want)):
		return Unchanged
	}
	return Configured
}

// content is u without what the API server keeps of its own, its status,
// and the labels and annotations that were not on before nor in want.
func content(u, before, want *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range [][]string{{"metadata", "resourceVersion"}, {"metadata", "managedFields"}, {"status"}} {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	c.SetLabels(without(c.GetLabels(), before.GetLabels(), want.GetLabels()))
	c.SetAnnotations(without(c.GetAnnotations(), before.GetAnnotations(), want.GetAnnotations()))
	return c.Object
}

// without is m without the keys in neither had nor ours; nil when empty.
func without(m, had, ours map[string]string) map[string]string {
	for k := range m {
		_, inHad := had[k]
		_, inOurs := ours[k]
		if !inHad && !inOurs {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
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
