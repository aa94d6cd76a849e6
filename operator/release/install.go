package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
)

// install installs the release. A server dry run, when the request asks for
// one, comes first; a client one is what Helm does anyway (it renders and
// builds every object before it writes anything), so it is not run twice.
type install struct{ c *Client }

func (a install) Name() string { return ActionInstall }

func (a install) Run(ctx context.Context, req *Request, st State) error {
	cfg := a.c.actionConfig(req.Namespace)
	newInstall := func() *action.Install {
		in := action.NewInstall(cfg)
		in.ReleaseName = req.Name
		in.Namespace = req.Namespace
		in.DisableHooks = req.InstallDisableHooks
		in.Timeout = req.timeout()
		in.ServerSideApply = req.ServerSideApply
		// Only hooks are waited for, as Helm 3 did without --wait: the
		// reconciler follows readiness through its own watches.
		in.WaitStrategy = kube.HookOnlyStrategy
		in.PostRenderer, in.PostRenderStrategy = req.PostRenderer, postRenderStrategy
		// The API server validates every object it receives; Helm's own
		// OpenAPI validation re-parses the schema documents on every action
		// and cost three quarters of the operator's CPU.
		in.DisableOpenAPIValidation = true
		in.Labels = revisionLabels(req, false)
		in.Description = "installed by chartpilot"
		return in
	}
	if req.DryRun == "server" {
		try := newInstall()
		try.DryRunStrategy = action.DryRunServer
		if _, err := try.RunWithContext(ctx, forAction(req.Chart), req.Values); err != nil {
			return fmt.Errorf("%w: %w (server dry run): %w", ErrInstallFailed, ErrNothingChanged, a.c.explainNotServed(err))
		}
	}
	if _, err := newInstall().RunWithContext(ctx, forAction(req.Chart), req.Values); err != nil {
		return a.c.failed(ErrInstallFailed, req, st, err)
	}
	return nil
}
