package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
)

// rollback returns a release whose upgrade failed to its last deployed
// revision, so the cluster runs something known to work while the failure is
// retried with backoff.
type rollback struct{ c *Client }

func (a rollback) Name() string { return ActionRollback }

func (a rollback) Run(ctx context.Context, req *Request, st State) error {
	if st.Deployed == nil {
		return fmt.Errorf("%w: no deployed revision to roll back to", ErrRemediationFailed)
	}
	rb := action.NewRollback(a.c.actionConfig(req.Namespace))
	rb.Version = st.Deployed.Version
	rb.Force = req.RollbackForce
	rb.DisableHooks = req.UpgradeDisableHooks
	rb.Timeout = req.timeout()
	rb.MaxHistory = maxHistory
	if err := rb.Run(req.Name); err != nil {
		return fmt.Errorf("%w: rollback to revision %d: %w", ErrRemediationFailed, st.Deployed.Version, err)
	}
	return ctx.Err()
}
