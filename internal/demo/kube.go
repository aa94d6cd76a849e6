package demo

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var (
	csvGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
	subGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}
	ipGVR  = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "installplans"}
)

// csvPhase returns the phase of a CSV and its message, or "" when it does
// not exist.
func csvPhase(ctx context.Context, dyn dynamic.Interface, ns, name string) (phase, message string, err error) {
	csv, err := dyn.Resource(csvGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if isNotFound(err) {
			return "", "", nil
		}
		return "", "", err
	}
	phase, _, _ = unstructured.NestedString(csv.Object, "status", "phase")
	message, _, _ = unstructured.NestedString(csv.Object, "status", "message")
	return phase, message, nil
}

// subscriptionState describes a Subscription for a progress message.
func subscriptionState(ctx context.Context, dyn dynamic.Interface, ns, name string) string {
	sub, err := dyn.Resource(subGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	state, _, _ := unstructured.NestedString(sub.Object, "status", "state")
	installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
	parts := []string{"subscription state " + state}
	if installed != "" {
		parts = append(parts, "installed "+installed)
	}
	conds, _, _ := unstructured.NestedSlice(sub.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] == "True" && m["type"] != "CatalogSourcesUnhealthy" {
			parts = append(parts, fmt.Sprintf("%v: %v", m["type"], m["message"]))
		}
	}
	return strings.Join(parts, ", ")
}

// condition returns the status, reason and message of a condition of obj.
func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
