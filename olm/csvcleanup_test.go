package olm

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Small builders of what is left of a deleted CSV.
var (
	// olmDone: OLM deleted what the CSV owned but kept its finalizer.
	olmDone = csvLeft{Finalizers: []string{CSVCleanupFinalizer}}
	// olmAtWork: a ClusterRole of the CSV's is still there.
	olmAtWork = csvLeft{Finalizers: []string{CSVCleanupFinalizer}, Owned: []string{"ClusterRole/demo.v0.1.0-abc"}}
	// unknown: what the CSV owned could not be listed.
	unknown = csvLeft{Finalizers: []string{CSVCleanupFinalizer}, OwnedUnknown: true}
	// notOLMs: a finalizer of someone else's is also there.
	notOLMs = csvLeft{Finalizers: []string{CSVCleanupFinalizer, "example.com/keep"}}
)

func TestShouldWake(t *testing.T) {
	const never = -1
	tests := []struct {
		name       string
		left       csvLeft
		cleanedFor time.Duration
		sinceWake  time.Duration
		want       bool
	}{
		{"OLM lost it, first wake-up", olmDone, wakeAfter, never, true},
		{"OLM may still remove it on its own", olmDone, wakeAfter - time.Millisecond, never, false},
		{"woken a moment ago", olmDone, time.Minute, wakeEvery - time.Second, false},
		{"woken long enough ago", olmDone, time.Minute, wakeEvery, true},
		{"OLM still deleting what the CSV owned", olmAtWork, time.Minute, never, false},
		{"what the CSV owned is unknown", unknown, time.Minute, never, false},
		{"a finalizer that is not OLM's", notOLMs, time.Minute, never, false},
		{"gone", csvLeft{Gone: true}, time.Minute, never, false},
		{"no finalizer left", csvLeft{}, time.Minute, never, false},
	}
	for _, tt := range tests {
		if got := shouldWake(tt.left, tt.cleanedFor, tt.sinceWake); got != tt.want {
			t.Errorf("%s: shouldWake = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The error of a CSV still there says what is left and what the user can do.
func TestCSVStuckErrorSaysWhatToDo(t *testing.T) {
	boom := errors.New("etcdserver: request timed out")
	tests := []struct {
		name    string
		err     *CSVStuckError
		want    []string
		notWant []string
	}{
		{
			name: "OLM lost the CSV",
			err:  &CSVStuckError{CSV: "demo.v0.1.0", Namespace: "ns", Waited: 2 * time.Minute, Left: olmDone, Wakes: 11},
			want: []string{"demo.v0.1.0 in ns is still there 2m0s after its deletion", "has not removed its finalizer operators.coreos.com/csv-cleanup",
				"asked 11 times", "chartpilot cluster status", "--force-remove-finalizers",
				`kubectl patch clusterserviceversion demo.v0.1.0 -n ns --type=merge -p '{"metadata":{"finalizers":null}}'`},
			notWant: []string{"last error"},
		},
		{
			name: "OLM not cleaning up",
			err:  &CSVStuckError{CSV: "demo.v0.1.0", Namespace: "ns", Waited: time.Minute, Left: olmAtWork},
			want: []string{"has not finished its cleanup", "ClusterRole/demo.v0.1.0-abc", "olm-operator", "run unsubscribe again"},
			// Removing the finalizer would leave the ClusterRole behind.
			notWant: []string{"--force-remove-finalizers", "kubectl patch"},
		},
		{
			name:    "someone else's finalizer",
			err:     &CSVStuckError{CSV: "demo.v0.1.0", Namespace: "ns", Waited: time.Minute, Left: csvLeft{Finalizers: []string{"example.com/keep"}}},
			want:    []string{"its finalizers example.com/keep are not OLM's"},
			notWant: []string{"kubectl patch"},
		},
		{
			name:    "the last poll failed",
			err:     &CSVStuckError{CSV: "demo.v0.1.0", Namespace: "ns", Waited: time.Minute, Left: olmDone, LastErr: boom},
			want:    []string{"has not removed its finalizer", "last error: etcdserver: request timed out"},
			notWant: nil,
		},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the error lacks %q:\n%s", tt.name, w, msg)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(msg, w) {
				t.Errorf("%s: the error has %q:\n%s", tt.name, w, msg)
			}
		}
	}
	if !errors.Is(&CSVStuckError{LastErr: boom}, boom) {
		t.Error("the last error is not wrapped")
	}
}

func TestObjectNames(t *testing.T) {
	crs := &rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	hooks := &admissionregistrationv1.ValidatingWebhookConfigurationList{Items: []admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"}}}}
	for _, tc := range []struct {
		list client.ObjectList
		want []string
	}{
		{crs, []string{"a", "b"}},
		{hooks, []string{"v"}},
		{&rbacv1.ClusterRoleBindingList{}, []string{}},
	} {
		if got := objectNames(tc.list); !slices.Equal(got, tc.want) {
			t.Errorf("objectNames(%T) = %q, want %q", tc.list, got, tc.want)
		}
	}
}
