package cluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/chartpilot/chartpilot/internal/monitoringcrd"
)

// monitoringCRDs serve ServiceMonitor and PrometheusRule: no Prometheus
// runs on the local cluster, but OLM fails the install of a bundle that
// ships them (as `chartpilot init`'s do) when they are not served.
func monitoringCRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, crd := range monitoringcrd.CRDs() {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}
