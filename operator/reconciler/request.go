package reconciler

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/values"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// requestMapping is what a CR's release request takes besides the CR: its
// watch (chart, override values, dry run, server-side apply, health
// deadline) and what the post-renderer adds.
type requestMapping struct {
	watch       watches.Watch
	chartDigest string
	// chartScales: the chart owns the autoscaling field (autoscale.ChartOwns).
	chartScales bool
	// labels go on every object of the release (Options.Labels).
	labels map[string]string
	mapper meta.RESTMapper
}

// newRequest maps a CR to its release request: named and placed as the CR
// (a cluster-scoped CR's release goes to the default namespace), its
// values from the spec (and the watch's overrides), Helm's options from
// the annotations, the objects tied to the CR by the post-renderer. It
// reads nothing but its arguments. When the spec's values are invalid it
// returns the error and the request without values, which serves to
// uninstall the release and for nothing else.
func (m requestMapping) newRequest(obj *unstructured.Unstructured) (*release.Request, error) {
	ann := obj.GetAnnotations()
	ns := obj.GetNamespace()
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	rollbackForce := true // operator-sdk's default
	if v, ok := ann[AnnotationRollbackForce]; ok {
		rollbackForce = isTrue(v)
	}
	deadline := m.watch.Deadline()
	if v, ok := ann[AnnotationHealthDeadline]; ok {
		if d, valid := parseDeadline(v); valid {
			deadline = d
		}
	}
	req := &release.Request{
		Name:                  obj.GetName(),
		Namespace:             ns,
		Chart:                 m.watch.LoadedChart,
		ChartDigest:           m.chartDigest,
		PostRenderer:          ownerRenderer{owner: obj, mapper: m.mapper, labels: m.labels},
		PostRenderDigest:      labelsDigest(m.labels),
		UpgradeForce:          isTrue(ann[AnnotationUpgradeForce]),
		RollbackForce:         rollbackForce,
		UninstallWait:         isTrue(ann[AnnotationUninstallWait]),
		InstallDisableHooks:   isTrue(ann[AnnotationInstallNoHooks]),
		UpgradeDisableHooks:   isTrue(ann[AnnotationUpgradeNoHooks]),
		UninstallDisableHooks: isTrue(ann[AnnotationUninstallNoHooks]),
		DryRun:                m.watch.DryRunOption,
		ServerSideApply:       m.watch.ServerSideApply,
		HealthDeadline:        deadline,
		Generation:            obj.GetGeneration(),
	}
	// The autoscaling field, when the operator owns it, asks the
	// post-renderer for HPAs rather than the chart for values.
	spec, scaling, err := autoscale.Split(m.chartScales, obj.Object["spec"])
	if err != nil {
		return req, err
	}
	if req.Values, err = values.Compose(m.watch.LoadedChart, spec, m.watch.OverrideValues); err != nil {
		req.Values = nil
		return req, err
	}
	if scaling.On() {
		req.PostRenderer = ownerRenderer{owner: obj, mapper: m.mapper, labels: m.labels, autoscale: scaling}
		req.PostRenderDigest = joinDigests(req.PostRenderDigest, scaling.Digest())
	}
	return req, nil
}

// parseDeadline reads a health deadline annotation: a Go duration, 0 or
// more ("0s" turns the gate off).
func parseDeadline(v string) (time.Duration, bool) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	return d, err == nil && d >= 0
}
