package release

import (
	"context"
	"fmt"
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
	if err := a.c.rollbackTo(req, good.Version); err != nil {
		return fmt.Errorf("%w: rollback to revision %d: %w", ErrRemediationFailed, good.Version, err)
	}
	return ctx.Err()
}

// rollbackTo rolls the release back to revision version. A forced rollback
// (operator-sdk's default) replaces every object with the revision's, which
// the API server refuses where a field the chart does not render was set
// since and cannot change: a bound PersistentVolumeClaim's volumeName. So a
// forced rollback that fails is retried as Helm's three-way patch, which
// leaves such fields alone, rather than leaving a stateful release on the
// revision it rolls back from.
func (c *Client) rollbackTo(req *Request, version int) error {
	run := func(force bool) error {
		return newRollback(c.actionConfig(req.Namespace), req, version, force).Run(req.Name)
	}
	err := run(req.RollbackForce)
	if err == nil || !req.RollbackForce {
		return err
	}
	c.log("forced rollback of %s/%s to revision %d failed, retrying without force: %v", req.Namespace, req.Name, version, err)
	if again := run(false); again != nil {
		return fmt.Errorf("%w; without force: %w", err, again)
	}
	return nil
}
