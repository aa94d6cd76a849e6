package release

import (
	"context"
	"fmt"
)

// rollbackUnhealthy returns a release whose new revision regressed or was
// not healthy by its deadline to the last revision recorded healthy
// (State.LastHealthy), not merely the previous one. It first records the
// revision as unhealthy, with why in its description: that is what keeps
// the same request from being tried again (see Rejected), across restarts
// of the operator.
type rollbackUnhealthy struct{ c *Client }

func (a rollbackUnhealthy) Name() string { return ActionRollback }

func (a rollbackUnhealthy) Run(ctx context.Context, req *Request, st State) error {
	bad, good := st.Deployed, st.LastHealthy
	if good == nil {
		return fmt.Errorf("%w: no revision recorded healthy to roll back to", ErrRemediationFailed)
	}
	why := fmt.Sprintf("unhealthy: %s; rolled back to revision %d by chartpilot", st.Reason, good.Version)
	if err := a.c.relabel(req, bad.Version, map[string]string{HealthLabel: HealthUnhealthy}, why); err != nil {
		return fmt.Errorf("%w: %w", ErrRemediationFailed, err)
	}
	if err := a.c.rollbackTo(req, good.Version); err != nil {
		return fmt.Errorf("%w: rollback of unhealthy revision %d to revision %d: %w", ErrRemediationFailed, bad.Version, good.Version, err)
	}
	return ctx.Err()
}
