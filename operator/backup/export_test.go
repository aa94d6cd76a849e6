package backup

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// RunHooks runs the hooks of phase that pods carry, as a backup does.
func (o *Options) RunHooks(ctx context.Context, pods []corev1.Pod, phase api.HookPhase) error {
	o.defaults()
	return o.runHooks(ctx, pods, phase, DefaultHookTimeout)
}

// HookReason is the status reason of a failure of RunHooks.
func HookReason(err error) string { return hookReason(err) }
