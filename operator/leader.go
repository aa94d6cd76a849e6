package operator

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
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
// cannot renew for RenewDeadline steps down (Run fences off that term and
// stands again, see Run): 5 s tolerates several slow or failed renewals,
// and leaves it 2 s before any standby can take over.
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

// leaseLock is the Lease that replicas elect their leader with, held under
// identity: one for the whole process, so that after an outage made it
// step down, the same process takes its own Lease back at once instead of
// waiting a LeaseDuration as a stranger would. Its events name identity.
func leaseLock(cfg *rest.Config, opts Options, identity string, rec *lazyRecorder) (resourcelock.Interface, error) {
	ns := opts.LeaderElectionNamespace
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return nil, fmt.Errorf("leader election: no --leader-election-namespace, and not running in a pod (%w)", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// One hung renewal must not cost the term.
	cfg.Timeout = max(opts.Lease.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, opts.LeaderElectionID, core, coord,
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: rec})
}

// serviceAccountNamespace holds the namespace of the pod the operator runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// newIdentity names this process as a candidate for leader.
func newIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// lazyRecorder records the Lease's events through the manager's recorder,
// which exists only once the manager the lock is made for does.
type lazyRecorder struct {
	mu  sync.Mutex
	rec record.EventRecorder
}

func (l *lazyRecorder) set(rec record.EventRecorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec = rec
}

func (l *lazyRecorder) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if rec != nil {
		rec.Eventf(obj, eventType, reason, message, args...)
	}
}
