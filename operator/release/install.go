package release

import "context"

// install installs the release, after a server dry run when the request
// asks for one (see tryThenRun).
type install struct{ c *Client }

func (a install) Name() string { return ActionInstall }

func (a install) Run(ctx context.Context, req *Request, st State) error {
	cfg := a.c.actionConfig(req.Namespace)
	return a.c.tryThenRun(req, st, ErrInstallFailed, func(serverTry bool) error {
		_, err := newInstall(cfg, req, serverTry).RunWithContext(ctx, forAction(req.Chart), req.Values)
		return err
	})
}
