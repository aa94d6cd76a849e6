package olm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
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
	// Catalog, if set, is the config a timed-out wait uses to ask the
	// CatalogSource's registry which packages it serves (ObserveCatalog),
	// so that the error names a catalog that serves nothing or not the
	// package.
	Catalog *rest.Config
}

// readTimeout bounds one read of the package's objects. The wait's own
// deadline is checked between reads, so that the last report is whole.
const readTimeout = 30 * time.Second

// Wait polls until the package's CSV is Succeeded (and the Subscription has
// installed it), and returns the last report. It stops early with
// ErrApprovalRequired when a Manual InstallPlan waits for approval, and when
// a read is refused access. On timeout the error carries what is stuck, what
// the catalog serves (with opts.Catalog) and the last read that failed.
func Wait(ctx context.Context, c client.Client, pkg, ns string, opts WaitOptions) (*Report, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	deadline := time.NewTimer(opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	w := waiter{c: c, pkg: pkg, ns: ns, opts: opts}
	for {
		if done, err := w.read(ctx); done {
			return w.last, err
		}
		select {
		case <-ctx.Done():
			return w.last, fmt.Errorf("waiting for package %s in %s: %w", pkg, ns, ctx.Err())
		case <-deadline.C:
			return w.last, w.timedOut(ctx)
		case <-tick.C:
		}
	}
}

// waiter is the state of one Wait.
type waiter struct {
	c       client.Client
	pkg, ns string
	opts    WaitOptions
	// last is the newest report, observed what it was made from.
	last     *Report
	observed *Observed
	// reported is the summary Progress was last called with.
	reported string
	// readErr is the error of the last read, if it failed.
	readErr error
}

// read observes the package once and says whether the wait is over.
func (w *waiter) read(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	o, err := Observe(ctx, w.c, w.pkg, w.ns)
	w.readErr = err
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return true, err // waiting will not grant the access
	}
	// Any other failed read (a busy API server) ends nothing: the next may work.
	if o == nil {
		return false, nil
	}
	w.observed, w.last = o, o.Report()
	if p := w.opts.Progress; p != nil && w.last.Summary() != w.reported {
		w.reported = w.last.Summary()
		p(w.last)
	}
	// The InstallPlan turns Complete a moment after the CSV succeeds.
	planDone := o.InstallPlan == nil || o.InstallPlan.Status.Phase == v1alpha1.InstallPlanPhaseComplete
	if o.Installed() && planDone && o.Subscription != nil && o.Subscription.Status.InstalledCSV == o.CSV.Name {
		return true, nil
	}
	if ip := o.InstallPlan; ip != nil && ip.Status.Phase == v1alpha1.InstallPlanPhaseRequiresApproval && !ip.Spec.Approved {
		return true, fmt.Errorf("%w: installplan/%s in %s", ErrApprovalRequired, ip.Name, w.ns)
	}
	return false, nil
}

// timedOut is the error of a wait past its timeout.
func (w *waiter) timedOut(ctx context.Context) error {
	if w.observed != nil && w.opts.Catalog != nil && !w.observed.Installed() {
		ObserveCatalog(ctx, w.opts.Catalog, w.observed)
		w.last = w.observed.Report()
	}
	err := stuckError(w.pkg, w.ns, w.opts.Timeout, w.last)
	if w.readErr != nil {
		err = fmt.Errorf("%w\nlast error reading them: %w", err, w.readErr)
	}
	return err
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
