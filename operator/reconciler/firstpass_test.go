package reconciler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/chartpilot/chartpilot/operator/health"
)

func TestSettled(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: 2}
	}
	// good is the status of a release deployed and ready at generation 2.
	good := func() Status {
		return Status{ObservedGeneration: 2, DeployedRelease: &DeployedRelease{Digest: "d"}, Conditions: []metav1.Condition{
			cond(TypeDeployed, metav1.ConditionTrue), cond(TypeReady, metav1.ConditionTrue),
			cond(TypeReleaseFailed, metav1.ConditionFalse), cond(TypeIrreconcilable, metav1.ConditionFalse),
			cond(TypeDrifted, metav1.ConditionFalse),
		}}
	}
	with := func(change func(*Status)) Status {
		st := good()
		change(&st)
		return st
	}
	tests := []struct {
		name string
		st   Status
		want bool
	}{
		{name: "deployed and ready as asked", st: good(), want: true},
		{name: "never reconciled", st: Status{}},
		{name: "the spec changed since", st: with(func(s *Status) { s.ObservedGeneration = 1 })},
		{name: "the chart or values changed since", st: with(func(s *Status) { s.DeployedRelease.Digest = "other" })},
		{name: "not ready", st: with(func(s *Status) { s.Conditions[1].Status = metav1.ConditionFalse })},
		{name: "a failure", st: with(func(s *Status) { s.Conditions[2].Status = metav1.ConditionTrue })},
		{name: "repair suspended", st: with(func(s *Status) { s.Conditions[4].Status = metav1.ConditionTrue })},
		{name: "an unhealthy object", st: with(func(s *Status) { s.Health = &health.Summary{Unhealthy: 1} })},
		{name: "a condition of an older generation", st: with(func(s *Status) { s.Conditions[0].ObservedGeneration = 1 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settled(tt.st, 2, "d"); got != tt.want {
				t.Errorf("settled = %v, want %v", got, tt.want)
			}
		})
	}
}

// Only a process's first reconcile of a CR can be deferred: the one after
// it checks.
func TestFirstPassOnce(t *testing.T) {
	var m memory
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	first := func() (f bool) { m.with(key, func(s *crState) { f = s.first() }); return f }
	if !first() || first() {
		t.Fatal("first reconcile not told apart from the next")
	}
	m.forget(key)
	if !first() {
		t.Error("a CR deleted and created again is not new to the process")
	}
	if d := firstPassWait(); d < firstPassDelay || d >= 2*firstPassDelay {
		t.Errorf("delay %s, want within [%s, %s)", d, firstPassDelay, 2*firstPassDelay)
	}
}
