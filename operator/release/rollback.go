package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
)

// rollback returns a release whose upgrade failed to its last good revision
// (see State.LastGood), so the cluster runs something known to work while the
// failure is retried with backoff.
type rollback struct{ c *Client }

func (a rollback) Name() string { return ActionRollback }

func (a rollback) Run(ctx context.Context, req *Request, st State) error {
	good := st.LastGood
	if good == nil {
		return fmt.Errorf("%w: no deployed or superseded revision to roll back to", ErrRemediationFailed)
	}
	rb := action.NewRollback(a.c.actionConfig(req.Namespace))
	rb.Version = good.Version
	rb.Force = req.RollbackForce
	rb.DisableHooks = req.UpgradeDisableHooks
	rb.Timeout = req.timeout()
	rb.MaxHistory = maxHistory
	if err := rb.Run(req.Name); err != nil {
		return fmt.Errorf("%w: rollback to revision %d: %w", ErrRemediationFailed, good.Version, err)
	}
	return ctx.Err()
}
