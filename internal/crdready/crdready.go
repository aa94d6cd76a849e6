package crdready

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// DefaultTimeout bounds a wait whose Options.Timeout is zero.
const DefaultTimeout = time.Minute

// pollInterval is the time between two looks. Discovery catches up within
// a second or so of a CRD being Established; a look is a few small GETs.
const pollInterval = 100 * time.Millisecond

// requestTimeout bounds each request when the configuration sets no
// timeout: discovery calls take no context, and a hung one must not hold a
// bounded wait forever.
const requestTimeout = 10 * time.Second

// Options configure Wait and WaitKinds.
type Options struct {
	// Timeout bounds the whole wait (default DefaultTimeout).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// ErrNotServed is what every NotServedError is: errors.Is(err,
// ErrNotServed) tells a wait that gave up from a failure to reach the
// cluster at all.
var ErrNotServed = errors.New("not served")

// NotServedError is returned, one per CRD or kind (joined with
// errors.Join), when a wait gives up. It wraps ErrNotServed and the
// context's error.
type NotServedError struct {
	// What names the CRD ("CRD widgets.example.com") or the kind
	// ("kind Widget.example.com/v1").
	What string
	// After is how long the wait lasted.
	After time.Duration
	// LastSeen is what the last look saw (Status.String for a CRD).
	LastSeen string
	// Hint, when set, says what to look at.
	Hint string
	// TimedOut reports whether the wait's own timeout ended it; otherwise
	// the caller's context did.
	TimedOut bool
	// Err is why the wait ended: context.DeadlineExceeded when its timeout
	// expired, else the caller's context's error.
	Err error
}

func (e *NotServedError) Error() string {
	msg := fmt.Sprintf("%s not served after %s", e.What, e.After)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	msg += ": last seen: " + e.LastSeen
	if !e.TimedOut && e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

// Unwrap returns ErrNotServed and the context's error.
func (e *NotServedError) Unwrap() []error { return []error{ErrNotServed, e.Err} }

// Status is what one look saw of a CRD.
type Status struct {
	// Name is the CRD's name, PLURAL.GROUP.
	Name string
	// Found reports whether the CRD exists.
	Found bool
	// Established reports whether its Established condition is True.
	Established bool
	// Condition says why it is not Established: NamesAccepted's status,
	// reason and message when that is False (a name conflict), else
	// Established's; empty when the CRD has neither condition yet.
	Condition string
	// Unserved says, for each served version whose kind discovery does not
	// list yet, where it is missing. Looked at only once Established.
	Unserved []string
	// Err is what hid the CRD (e.g. Forbidden), if anything did.
	Err error
}

// Ready reports whether the CRD is Established and discovery serves the
// kind of each of its served versions.
func (s Status) Ready() bool {
	return s.Err == nil && s.Found && s.Established && len(s.Unserved) == 0
}

// String says what was seen, for messages.
func (s Status) String() string {
	switch {
	case s.Err != nil:
		return "reading it: " + s.Err.Error()
	case !s.Found:
		return "not found"
	case !s.Established && s.Condition == "":
		return "no Established condition yet"
	case !s.Established:
		return "not Established: " + s.Condition
	case len(s.Unserved) > 0:
		return "Established, but " + strings.Join(s.Unserved, "; ")
	}
	return "Established and served by discovery"
}

// Wait waits until each CRD named (PLURAL.GROUP) is Established and
// discovery serves the kind of each of its served versions, or
// opts.Timeout passes. It then fails with a NotServedError for each CRD
// not ready, saying what was last seen of it. Callers with a cached
// discovery or a REST mapper reset them afterwards.
func Wait(ctx context.Context, cfg *rest.Config, names []string, opts Options) error {
	l, err := newLooker(cfg)
	if err != nil {
		return err
	}
	return waitFor(ctx, l, opts, names, func(ctx context.Context, v *view, name string) (bool, string) {
		s := l.observe(ctx, v, name)
		return s.Ready(), s.String()
	}, func(name string) (string, string) { return "CRD " + name, "" })
}

// WaitKinds waits until discovery serves each kind, or opts.Timeout
// passes; it reads no CRD, so any authenticated user may call it (an
// operator running as its ServiceAccount at start). It then fails with a
// NotServedError for each kind not served, saying what discovery last
// showed of it.
func WaitKinds(ctx context.Context, cfg *rest.Config, gvks []schema.GroupVersionKind, opts Options) error {
	l, err := newLooker(cfg)
	if err != nil {
		return err
	}
	return waitFor(ctx, l, opts, gvks, func(_ context.Context, v *view, gvk schema.GroupVersionKind) (bool, string) {
		m := v.missing(gvk.GroupVersion(), gvk.Kind, "")
		return m == "", m
	}, func(gvk schema.GroupVersionKind) (string, string) {
		return "kind " + kindString(gvk), "is its CRD installed and Established?"
	})
}

// Observe looks once at the CRD named: whether it exists, is Established
// and served by discovery. An error means cfg makes no client; what kept
// the CRD from being read is Status.Err.
func Observe(ctx context.Context, cfg *rest.Config, name string) (Status, error) {
	l, err := newLooker(cfg)
	if err != nil {
		return Status{}, err
	}
	return l.observe(ctx, &view{disc: l.disc}, name), nil
}

// looker reads CRDs and discovery, without any cache.
type looker struct {
	crds apiextensionsclient.CustomResourceDefinitionInterface
	disc *discovery.DiscoveryClient
}

func newLooker(cfg *rest.Config) (*looker, error) {
	if cfg == nil {
		return nil, errors.New("no cluster configuration")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	// The looks are paced by pollInterval. A client-side rate limiter
	// (client-go's default allows 5 requests a second) would space them
	// by seconds, and near the end of a wait fail a look with its own
	// error instead of showing what the cluster says.
	cfg.QPS, cfg.RateLimiter = -1, nil
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	return &looker{crds: ext.CustomResourceDefinitions(), disc: disc}, nil
}

// waitFor polls until ready says each item is ready, with one fresh view
// of discovery per look, then names the items left with what was last seen
// of them. A look stops at the first item not ready, as later ones are
// likely not ready either; items never looked at get one last look.
func waitFor[T comparable](ctx context.Context, l *looker, opts Options, items []T,
	ready func(context.Context, *view, T) (bool, string), name func(T) (what, hint string)) error {
	opts = opts.withDefaults()
	began := time.Now()
	pending := slices.Clone(items)
	last := map[T]string{}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		v := &view{disc: l.disc}
		for len(pending) > 0 {
			ok, seen := ready(ctx, v, pending[0])
			if ctx.Err() != nil {
				// What a cancelled request saw says nothing of the cluster.
				return false, nil
			}
			last[pending[0]] = seen
			if !ok {
				return false, nil
			}
			pending = pending[1:]
		}
		return true, nil
	})
	if err == nil {
		return nil
	}
	after := time.Since(began).Round(time.Millisecond)
	timedOut := ctx.Err() == nil // our own timeout, not the caller's context
	if timedOut {
		after = opts.Timeout
	}
	lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	v := &view{disc: l.disc}
	errs := make([]error, 0, len(pending))
	for _, it := range pending {
		seen, ok := last[it]
		if !ok {
			_, seen = ready(lookCtx, v, it)
		}
		what, hint := name(it)
		errs = append(errs, &NotServedError{What: what, After: after, LastSeen: seen, Hint: hint, TimedOut: timedOut, Err: err})
	}
	return errors.Join(errs...)
}

// observe looks at the CRD named, and at discovery when it is Established.
func (l *looker) observe(ctx context.Context, v *view, name string) Status {
	s := Status{Name: name}
	crd, err := l.crds.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s
	}
	if err != nil {
		s.Err = err
		return s
	}
	s.Found = true
	var established, namesAccepted *apiextensionsv1.CustomResourceDefinitionCondition
	for i, c := range crd.Status.Conditions {
		switch c.Type {
		case apiextensionsv1.Established:
			established = &crd.Status.Conditions[i]
		case apiextensionsv1.NamesAccepted:
			namesAccepted = &crd.Status.Conditions[i]
		}
	}
	s.Established = established != nil && established.Status == apiextensionsv1.ConditionTrue
	if !s.Established {
		switch {
		case namesAccepted != nil && namesAccepted.Status == apiextensionsv1.ConditionFalse:
			s.Condition = describeCondition(namesAccepted)
		case established != nil:
			s.Condition = describeCondition(established)
		}
		return s
	}
	for _, ver := range crd.Spec.Versions {
		if !ver.Served {
			continue
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: ver.Name}
		if m := v.missing(gv, crd.Spec.Names.Kind, crd.Spec.Names.Plural); m != "" {
			s.Unserved = append(s.Unserved, m)
		}
	}
	return s
}

// describeCondition is "TYPE STATUS (REASON): MESSAGE".
func describeCondition(c *apiextensionsv1.CustomResourceDefinitionCondition) string {
	out := fmt.Sprintf("%s %s", c.Type, c.Status)
	if c.Reason != "" {
		out += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		out += ": " + c.Message
	}
	return out
}

// kindString is KIND.GROUP/VERSION, or KIND/VERSION for the core group.
func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind + "/" + gvk.Version
	}
	return gvk.Kind + "." + gvk.Group + "/" + gvk.Version
}
