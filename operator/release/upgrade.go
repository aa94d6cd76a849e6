package release

import "context"

// upgrade upgrades the release to the request's chart and values, after a
// server dry run when the request asks for one (see tryThenRun).
type upgrade struct{ c *Client }

func (a upgrade) Name() string { return ActionUpgrade }

func (a upgrade) Run(ctx context.Context, req *Request, st State) error {
	cfg := a.c.actionConfig(req.Namespace)
	return a.c.tryThenRun(req, st, ErrUpgradeFailed, func(serverTry bool) error {
		_, err := newUpgrade(cfg, req, serverTry).RunWithContext(ctx, req.Name, forAction(req.Chart), req.Values)
		return err
	})
}
