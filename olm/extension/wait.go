package extension

import (
	"context"
	"errors"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrBlocked means operator-controller gave up on the spec (Progressing
// False, reason Blocked or InvalidConfiguration): it retries only once the
// spec changes.
var ErrBlocked = errors.New("operator-controller gave up on the ClusterExtension")

// ErrTimeout means Wait's timeout passed first.
var ErrTimeout = errors.New("timed out waiting for the ClusterExtension")

// WaitOptions configure Wait.
type WaitOptions struct {
	// Timeout bounds the wait; default 5 minutes.
	Timeout time.Duration
	// Version, when set, is the bundle version to wait for (an upgrade).
	Version string
	// Progress is called with each new report summary.
	Progress func(*Report)
	// Interval between reads; default 250ms.
	Interval time.Duration
}

// Wait polls the ClusterExtension until it is installed (at
// opts.Version, when set). It stops early when operator-controller blocks;
// on timeout the error carries the last report's problem.
func Wait(ctx context.Context, c client.Client, name string, opts WaitOptions) (*Report, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Interval == 0 {
		opts.Interval = 250 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// Once: the CRD is the largest object polled, and it does not change
	// while an extension installs.
	f, err := ReadFeatures(ctx, c)
	if err != nil {
		return nil, err
	}
	last := ""
	var r *Report
	for {
		o, err := observe(ctx, c, name, f)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			r = o.Report()
			if s := r.Summary(); s != last && opts.Progress != nil {
				opts.Progress(r)
				last = s
			}
			if r.Installed && (opts.Version == "" || r.Bundle.Version == opts.Version) {
				return r, nil
			}
			if blocked(o) {
				return r, fmt.Errorf("%w: %s", ErrBlocked, r.Summary())
			}
		}
		select {
		case <-ctx.Done():
			if r == nil {
				return nil, fmt.Errorf("%w %s: %w", ErrTimeout, name, ctx.Err())
			}
			want := "installed"
			if opts.Version != "" {
				want = "at version " + opts.Version
			}
			return r, fmt.Errorf("%w %s to be %s after %s: %s", ErrTimeout, name, want, opts.Timeout, r.Summary())
		case <-time.After(opts.Interval):
		}
	}
}

// blocked says whether operator-controller blocked the current spec.
func blocked(o *Observation) bool {
	if o.Extension == nil {
		return false
	}
	p := apimeta.FindStatusCondition(o.Extension.Status.Conditions, TypeProgressing)
	return p != nil && terminal(p) && p.ObservedGeneration == o.Extension.Generation
}
