package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/operator/health"
)

// A status computed from a stale read keeps what a newer write changed
// that this reconcile did not.
func TestRebase(t *testing.T) {
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: 1}
	}
	status := func(gen int64, conds ...metav1.Condition) Status {
		return Status{ObservedGeneration: gen, Conditions: conds}
	}
	sick := &health.Summary{}
	for _, tc := range []struct {
		name               string
		base, ours, theirs Status
		want               Status
	}{{
		name:   "a repair recorded since the stale read is kept",
		base:   status(1, cond(TypeDrifted, ReasonNoDrift)),
		ours:   status(1, cond(TypeDrifted, ReasonNoDrift), cond(TypeReady, "ObjectsReady")),
		theirs: status(1, cond(TypeDrifted, ReasonDriftRepaired)),
		want:   status(1, cond(TypeDrifted, ReasonDriftRepaired), cond(TypeReady, "ObjectsReady")),
	}, {
		name:   "what this reconcile changed wins",
		base:   status(1, cond(TypeDrifted, ReasonNoDrift)),
		ours:   status(2, cond(TypeDrifted, ReasonDriftRepaired)),
		theirs: status(1, cond(TypeDrifted, ReasonNoDrift), cond(TypeReady, "ObjectsReady")),
		want:   status(2, cond(TypeDrifted, ReasonDriftRepaired), cond(TypeReady, "ObjectsReady")),
	}, {
		name:   "a condition this reconcile removed goes",
		base:   status(1, cond(TypeReleaseFailed, "UpgradeError"), cond(TypeReady, "ObjectsReady")),
		ours:   status(1, cond(TypeReady, "ObjectsReady")),
		theirs: status(1, cond(TypeReleaseFailed, "UpgradeError"), cond(TypeReady, "ObjectsReady")),
		want:   status(1, cond(TypeReady, "ObjectsReady")),
	}, {
		name:   "health this reconcile found replaces theirs; theirs stays when ours is unchanged",
		base:   Status{ObservedGeneration: 1},
		ours:   Status{ObservedGeneration: 1, Health: sick},
		theirs: Status{ObservedGeneration: 1, DeployedRelease: &DeployedRelease{Name: "a", Version: 2}},
		want:   Status{ObservedGeneration: 1, Health: sick, DeployedRelease: &DeployedRelease{Name: "a", Version: 2}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			theirs := tc.theirs
			theirs.Conditions = append([]metav1.Condition(nil), tc.theirs.Conditions...)
			got := rebase(tc.base, tc.ours, tc.theirs)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("rebase:\n got %+v\nwant %+v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(theirs, tc.theirs) {
				t.Errorf("rebase changed its input: %+v", tc.theirs)
			}
		})
	}
}
