package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/internal/monitoringcrd"
)

// applyMonitoringCRDs serves ServiceMonitor and PrometheusRule: no
// Prometheus runs on the local cluster, but OLM fails the install of a
// bundle that ships them (as `chartpilot init`'s do) when they are not
// served. It returns the CRDs' names.
func applyMonitoringCRDs(ctx context.Context, dyn dynamic.Interface) ([]string, error) {
	var names []string
	for _, crd := range monitoringcrd.CRDs() {
		body, err := json.Marshal(crd)
		if err != nil {
			return nil, err
		}
		if _, err := dyn.Resource(crdResource).Patch(ctx, crd.Name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
			return nil, fmt.Errorf("applying CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	return names, nil
}
