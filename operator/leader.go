package operator

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// The leader election's timing by default. A leader killed without notice
// (SIGKILL, OOM, a lost node) cannot release its Lease: a standby takes over
// once it has seen the Lease unrenewed for LeaseDuration, checking every
// RetryPeriod (jittered by client-go up to 2.2 times). In the worst case
// that is LeaseDuration + 4.4 RetryPeriods after the kill (the standby's
// last sight of a renewal can come up to 2.2 RetryPeriods after it): 12.4 s
// here, under the 15 s the operator promises, where controller-runtime's
// 15 s / 10 s / 2 s take up to 24 s. The price is one Lease update a second
// by the leader and a read every 1-2.2 s by each standby. A leader that
// cannot renew for RenewDeadline steps down (and the process exits, to be
// restarted): 5 s tolerates several slow or failed renewals, and leaves it
// 2 s before any standby can take over.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 5 * time.Second
	DefaultRetryPeriod   = time.Second
)

// LeaseTiming times the leader election of replicas (Options.LeaderElection).
type LeaseTiming struct {
	// LeaseDuration is how long a standby waits, from its last sight of a
	// renewal, before it takes the Lease. Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// steps down; shorter than LeaseDuration. Default DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod spaces the leader's renewals and the standbys' attempts.
	// Default DefaultRetryPeriod.
	RetryPeriod time.Duration
}

func (l *LeaseTiming) defaults() {
	if l.LeaseDuration == 0 {
		l.LeaseDuration = DefaultLeaseDuration
	}
	if l.RenewDeadline == 0 {
		l.RenewDeadline = DefaultRenewDeadline
	}
	if l.RetryPeriod == 0 {
		l.RetryPeriod = DefaultRetryPeriod
	}
}

// validate checks what client-go's leader election requires, so that the
// operator refuses to start with a message naming the settings rather than
// failing once its caches are up.
func (l LeaseTiming) validate() error {
	switch {
	case l.LeaseDuration < 0 || l.RenewDeadline < 0 || l.RetryPeriod < 0:
		return fmt.Errorf("leader election: negative durations (lease duration %s, renew deadline %s, retry period %s)", l.LeaseDuration, l.RenewDeadline, l.RetryPeriod)
	case l.LeaseDuration < time.Second:
		// The Lease records whole seconds.
		return fmt.Errorf("leader election: lease duration %s is under 1s", l.LeaseDuration)
	case l.LeaseDuration <= l.RenewDeadline:
		return fmt.Errorf("leader election: lease duration %s must be longer than the renew deadline %s", l.LeaseDuration, l.RenewDeadline)
	case float64(l.RenewDeadline) <= leaderelection.JitterFactor*float64(l.RetryPeriod):
		return fmt.Errorf("leader election: renew deadline %s must be longer than %.1f times the retry period %s", l.RenewDeadline, leaderelection.JitterFactor, l.RetryPeriod)
	}
	return nil
}
