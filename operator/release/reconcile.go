package release

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Performed is one action Reconcile ran.
type Performed struct {
	Action   string
	Duration time.Duration
	Err      error
	// Drift is what a repair set out to restore.
	Drift []string
	// Cause is the failure a remediation (rollback, uninstall) answered.
	Cause error
}

// Result is what Reconcile did and what it saw last.
type Result struct {
	// State is the last observation: after the actions when they succeeded.
	State State
	// Actions ran in order.
	Actions []Performed
}

// Changed reports whether any action ran.
func (r Result) Changed() bool { return len(r.Actions) > 0 }

// Reconcile brings the release to the request: observe, act, observe again,
// until in sync. Each action runs at most once per call, so a release that
// keeps failing costs one attempt per call and the caller's backoff decides
// when the next comes.
//
// Contract with the caller: a nil error means the release is settled
// (Status.Settled): InSync (its objects may still be getting ready: see
// Result.State.NotReady), Watching (look again at Result.State.VerifyAt),
// or Rejected (an unhealthy upgrade was rolled back; the caller reports
// Result.State.Reason and waits for the CR or the chart to change); or
// Drifted when the request leaves drift alone (Request.LeaveDrift). An error
// wraps one of this package's sentinels; the caller records it and retries
// with backoff. Failures are remediated before Reconcile returns: a failed
// upgrade is rolled back, a failed install uninstalled.
func (c *Client) Reconcile(ctx context.Context, req *Request) (Result, error) {
	var res Result
	done := map[string]bool{}
	run := func(a Action, st State, cause error) error {
		if done[a.Name()] {
			return fmt.Errorf("%w: %s needed again (%s)", ErrNotConverged, a.Name(), st.Reason)
		}
		done[a.Name()] = true
		began := time.Now()
		err := a.Run(ctx, req, st)
		p := Performed{Action: a.Name(), Duration: time.Since(began), Err: err, Cause: cause}
		for _, d := range st.Drift {
			p.Drift = append(p.Drift, d.String())
		}
		res.Actions = append(res.Actions, p)
		return err
	}
	// remediate runs a remediation after a failure (even if that action ran
	// before in this call) and returns both errors.
	remediate := func(cause error, a Action, st State) error {
		if errors.Is(cause, ErrNothingChanged) {
			return cause
		}
		began := time.Now()
		err := a.Run(ctx, req, st)
		res.Actions = append(res.Actions, Performed{Action: a.Name(), Duration: time.Since(began), Err: err, Cause: cause})
		if err != nil {
			return errors.Join(cause, err)
		}
		return cause
	}

	for range 6 {
		st, err := c.Observe(ctx, req)
		res.State = st
		if err != nil {
			return res, err
		}
		if st.Status.Settled() || (st.Status == Drifted && req.LeaveDrift) {
			return res, nil
		}
		step, err := c.plan(st)
		if err != nil {
			return res, err
		}
		if err := run(step.action, st, step.cause); err != nil {
			if step.remediation == nil {
				return res, err
			}
			err = remediate(err, step.remediation, st)
			return c.settled(ctx, req, res), err
		}
	}
	return res, fmt.Errorf("%w: still %s after %d actions", ErrNotConverged, res.State.Status, len(res.Actions))
}

// step is what brings a release one state closer to its request, and what
// restores a known state when that fails.
type step struct {
	action, remediation Action
	// cause is what the action answers, when it is a remediation itself.
	cause error
}

// plan chooses the step for a state that is not InSync. A release that was
// ever deployed is only ever upgraded or rolled back: its objects are live.
// Only a first install that failed is uninstalled, to install it afresh.
func (c *Client) plan(st State) (step, error) {
	switch st.Status {
	case Locked:
		return step{action: unlock{c}}, nil
	case Absent:
		return step{action: install{c}, remediation: uninstallAction{c: c, remediation: true}}, nil
	case Failed:
		if st.EverDeployed {
			return step{action: upgrade{c}, remediation: rollback{c}}, nil
		}
		// A failed install leaves records (and maybe objects) that block
		// a new install: clear them, then install from scratch.
		return step{action: uninstallAction{c: c, remediation: true}}, nil
	case OutOfSync:
		return step{action: upgrade{c}, remediation: rollback{c}}, nil
	case Drifted:
		return step{action: repair{}}, nil
	case Unverified:
		return step{action: verify{c}}, nil
	case Unhealthy:
		return step{action: rollbackUnhealthy{c}, cause: fmt.Errorf("%w: %s", ErrUnhealthy, st.Reason)}, nil
	}
	return step{}, fmt.Errorf("unknown release state %q", st.Status)
}

// settled observes the release again after a failed action and its
// remediation, so that the result (and the CR's status) says which revision
// is deployed now rather than which was before.
func (c *Client) settled(ctx context.Context, req *Request, res Result) Result {
	quick := *req
	quick.SkipDrift = true
	if st, err := c.Observe(ctx, &quick); err == nil {
		res.State = st
	}
	return res
}
