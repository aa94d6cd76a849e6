package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
)

// install installs the release, tried first as the request's dry run says.
type install struct{ c *Client }

func (a install) Name() string { return ActionInstall }

func (a install) Run(ctx context.Context, req *Request, _ State) error {
	cfg := a.c.actionConfig(req.Namespace)
	newInstall := func() *action.Install {
		in := action.NewInstall(cfg)
		in.ReleaseName = req.Name
		in.Namespace = req.Namespace
		in.DisableHooks = req.InstallDisableHooks
		in.Timeout = req.timeout()
		in.PostRenderer = req.PostRenderer
		// The API server validates every object it receives; Helm's own
		// OpenAPI validation re-parses the schema documents on every action
		// and cost three quarters of the operator's CPU.
		in.DisableOpenAPIValidation = true
		in.Labels = map[string]string{DigestLabel: req.Digest()}
		in.Description = "installed by chartpilot"
		return in
	}
	if req.DryRun == "client" || req.DryRun == "server" {
		try := newInstall()
		try.DryRun, try.DryRunOption = true, req.DryRun
		if _, err := try.RunWithContext(ctx, req.Chart, req.Values); err != nil {
			return fmt.Errorf("%w: %w (%s): %w", ErrInstallFailed, ErrDryRunFailed, req.DryRun, err)
		}
	}
	if _, err := newInstall().RunWithContext(ctx, req.Chart, req.Values); err != nil {
		return fmt.Errorf("%w: %w", ErrInstallFailed, err)
	}
	return nil
}
