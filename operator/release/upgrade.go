package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
)

// MaxHistory is how many revisions of a release Helm keeps: each is a Secret.
const MaxHistory = 10

// postRenderStrategy keeps hooks out of the post-renderer, as in Helm 3:
// Helm 4 sends them along by default, and the runtime's post-renderers
// (owner references, labels, autoscalers) are for the release's objects.
const postRenderStrategy = action.PostRenderStrategyNoHooks

// applyMethod is how upgrades and rollbacks apply: the way the release's
// latest revision was applied (Helm's "auto"), so a release never changes
// field managers behind its owner's back.
const applyMethod = "auto"

// upgrade upgrades the release to the request's chart and values, after a
// server dry run when the request asks for one (see install).
type upgrade struct{ c *Client }

func (a upgrade) Name() string { return ActionUpgrade }

func (a upgrade) Run(ctx context.Context, req *Request, st State) error {
	sentinel, description := ErrUpgradeFailed, "upgraded by chartpilot"
	cfg := a.c.actionConfig(req.Namespace)
	newUpgrade := func() *action.Upgrade {
		up := action.NewUpgrade(cfg)
		up.Namespace = req.Namespace
		up.ForceReplace = req.UpgradeForce
		up.ServerSideApply = applyMethod
		up.WaitStrategy = kube.HookOnlyStrategy
		up.DisableHooks = req.UpgradeDisableHooks
		up.Timeout = req.timeout()
		up.PostRenderer, up.PostRenderStrategy = req.PostRenderer, postRenderStrategy
		// The API server validates every object it receives; Helm's own
		// OpenAPI validation re-parses the schema documents on every action
		// and cost three quarters of the operator's CPU.
		up.DisableOpenAPIValidation = true
		up.MaxHistory = MaxHistory
		up.Labels = revisionLabels(req, true)
		up.Description = description
		return up
	}
	if req.DryRun == "server" {
		try := newUpgrade()
		try.DryRunStrategy = action.DryRunServer
		if _, err := try.RunWithContext(ctx, req.Name, forAction(req.Chart), req.Values); err != nil {
			return fmt.Errorf("%w: %w (server dry run): %w", sentinel, ErrNothingChanged, a.c.explainNotServed(err))
		}
	}
	if _, err := newUpgrade().RunWithContext(ctx, req.Name, forAction(req.Chart), req.Values); err != nil {
		return a.c.failed(sentinel, req, st, err)
	}
	return nil
}
