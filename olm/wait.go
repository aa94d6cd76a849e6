package olm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrApprovalRequired means the install waits for a Manual InstallPlan to be approved.
var ErrApprovalRequired = errors.New("the InstallPlan waits for approval")

// WaitOptions configure Wait.
type WaitOptions struct {
	// Timeout bounds the wait; default 5 minutes.
	Timeout time.Duration
	// Interval between reads; default 1 second.
	Interval time.Duration
	// Progress, if set, is called with each report whose summary changed.
	Progress func(*Report)
}

// Wait polls until the package's CSV is Succeeded (and the Subscription has
// installed it), and returns the last report. It stops early with
// ErrApprovalRequired when a Manual InstallPlan waits for approval; on
// timeout the error carries what is stuck.
func Wait(ctx context.Context, c client.Client, pkg, ns string, opts WaitOptions) (*Report, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	var last *Report
	for {
		o, err := Observe(ctx, c, pkg, ns)
		if err != nil && ctx.Err() == nil {
			return last, err
		}
		if o != nil {
			r := o.Report()
			if opts.Progress != nil && (last == nil || r.Summary() != last.Summary()) {
				opts.Progress(r)
			}
			last = r
			// The InstallPlan turns Complete a moment after the CSV succeeds.
			planDone := o.InstallPlan == nil || o.InstallPlan.Status.Phase == v1alpha1.InstallPlanPhaseComplete
			if o.Installed() && planDone && o.Subscription != nil && o.Subscription.Status.InstalledCSV == o.CSV.Name {
				return r, nil
			}
			if ip := o.InstallPlan; ip != nil && ip.Status.Phase == v1alpha1.InstallPlanPhaseRequiresApproval && !ip.Spec.Approved {
				return r, fmt.Errorf("%w: installplan/%s in %s", ErrApprovalRequired, ip.Name, ns)
			}
		}
		select {
		case <-ctx.Done():
			return last, stuckError(pkg, ns, opts.Timeout, last)
		case <-tick.C:
		}
	}
}

func stuckError(pkg, ns string, timeout time.Duration, r *Report) error {
	msg := fmt.Sprintf("package %s in %s not installed after %s", pkg, ns, timeout)
	if r == nil {
		return errors.New(msg)
	}
	var lines []string
	for _, f := range r.Stuck() {
		line := f.Check + ": " + f.Message
		if f.Fix != "" {
			line += "\n    fix: " + f.Fix
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return errors.New(msg)
	}
	return fmt.Errorf("%s:\n  %s", msg, strings.Join(lines, "\n  "))
}
