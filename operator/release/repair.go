package release

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// repair restores the objects of the deployed revision that drifted: a
// deleted object is created again, a changed one gets the revision's fields
// back. It writes the objects directly rather than through a Helm upgrade:
// Helm's three-way merge keeps both the old and the edited element of a list
// keyed by a field (a Service port edited from 80 to 81 becomes two ports),
// and a repair is not a new revision of the release.
type repair struct{}

func (repair) Name() string { return ActionRepair }

func (repair) Run(ctx context.Context, _ *Request, st State) error {
	var errs []error
	for _, d := range st.Drift {
		var err error
		switch {
		case d.Deleted && d.live != nil:
			// Being deleted: the next observation sees it gone and creates it.
			continue
		case d.Deleted:
			_, err = d.resource.Create(ctx, d.desired.DeepCopy(), metav1.CreateOptions{FieldManager: fieldManager})
		default:
			restored := d.live.DeepCopy()
			overlay(restored.Object, d.desired.Object)
			_, err = d.resource.Update(ctx, restored, metav1.UpdateOptions{FieldManager: fieldManager})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.String(), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrRepairFailed, errors.Join(errs...))
	}
	return nil
}

// fieldManager names chartpilot's writes in managedFields.
const fieldManager = "chartpilot"

// overlay writes every field of desired into live: maps merge (fields only in
// live, such as defaults, stay), lists and scalars are replaced.
func overlay(live, desired map[string]any) {
	for k, dv := range desired {
		if ignoredPaths["."+k] {
			continue
		}
		dm, dIsMap := dv.(map[string]any)
		lm, lIsMap := live[k].(map[string]any)
		if dIsMap && lIsMap {
			overlay(lm, dm)
			continue
		}
		live[k] = runtimeCopy(dv)
	}
}

func runtimeCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}
