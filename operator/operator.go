package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/operator/backup"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// Options configure an operator. Zero values take the defaults noted.
type Options struct {
	// Watches are the kinds to reconcile (see package watches).
	Watches []watches.Watch
	// Config reaches the API server with the operator's identity.
	Config *rest.Config
	// Namespaces limits the operator to these namespaces; empty means all.
	// OLM sets them through WATCH_NAMESPACE.
	Namespaces []string
	// MaxConcurrentReconciles per kind, unless its watch sets one. Default 1.
	MaxConcurrentReconciles int
	// ReconcilePeriod re-checks each CR this often unless its watch or
	// annotation says otherwise; 0 only reconciles on changes.
	ReconcilePeriod time.Duration
	// Backoff spaces the attempts of a release that keeps failing.
	Backoff reconciler.Backoff
	// DriftLimit stops repairing a release whose objects keep drifting.
	DriftLimit reconciler.DriftLimit
	// LeaderElection, with a Lease named LeaderElectionID in
	// LeaderElectionNamespace, lets replicas stand by.
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// Lease times the leader election; zero fields take the defaults
	// (DefaultLeaseDuration...). A leader stopped by ctx releases its
	// Lease, so that a standby takes over at its next attempt.
	Lease LeaseTiming
	// MetricsBindAddress serves Prometheus metrics; "0" disables. Default
	// 127.0.0.1:8443 when Metrics.Secure, else 127.0.0.1:8080.
	MetricsBindAddress string
	// Metrics says how the metrics are served: HTTPS to authorized
	// scrapers only, or plain HTTP (the zero value).
	Metrics MetricsServing
	// ReleaseSeriesLimit bounds the CRs whose per-release series the
	// metrics hold (releasemetrics.Options.SeriesLimit): 0 takes
	// releasemetrics.DefaultSeriesLimit, negative exports every CR's.
	ReleaseSeriesLimit int
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables. Default 127.0.0.1:8081.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles (/debug/pprof/), to see where
	// memory and CPU go; "" or "0" disables (the default).
	PprofBindAddress string
	// Shard, when set, limits this operator to the CRs labelled ShardLabel
	// with that value, and suffixes the leader election Lease with it, so
	// that several operators split the CRs between them, each with its own
	// leader. Unset, the operator takes every CR not labelled for a shard:
	// two operators never reconcile the same CR. The objects and release
	// records of a shard's releases carry its label too, and each operator
	// caches only its own shard's (pods but for their label: relabelling a
	// pod template would roll the pods).
	Shard string
	// Log is the logger; defaults to controller-runtime's. Either is
	// capped (CapVerbosity).
	Log logr.Logger
	// ServedTimeout bounds how long Run waits at start for discovery to
	// serve the watched kinds (their CRDs are applied just before the
	// operator by `make install`, OLM or the scorecard). Default
	// DefaultServedTimeout.
	ServedTimeout time.Duration

	// MoverImage is the image of the pods that copy volumes for backups
	// and restores: the operator's own. Empty finds it from the operator's
	// pod (see backup.Options.MoverImage).
	MoverImage string

	// SkipNameValidation lets several operators for the same kinds run in
	// one process (the scorecard's cluster tests, tests): controller-runtime
	// otherwise refuses a second controller of the same name, which labels
	// its metrics.
	SkipNameValidation bool

	// identity is this process's name as a candidate for leader, kept
	// across the terms Run starts; New makes one when empty.
	identity string
	// outage logs the API server's absence once for every controller, and
	// across the terms Run starts (an outage may end a term); New makes
	// one when nil.
	outage *reconciler.Outage
}

func (o *Options) defaults() {
	// client-go's default of 5 requests a second would throttle Helm, which
	// makes several requests per action; raise it unless the caller chose.
	if o.Config != nil && o.Config.QPS == 0 {
		o.Config = rest.CopyConfig(o.Config)
		o.Config.QPS, o.Config.Burst = 100, 200
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 1
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = o.Metrics.defaultAddress()
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = "127.0.0.1:8081"
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "chartpilot-helm-operator"
	}
	if o.Shard != "" {
		o.LeaderElectionID += "-" + o.Shard
	}
	o.Lease.defaults()
	if o.Log.GetSink() == nil {
		o.Log = ctrl.Log.WithName("chartpilot")
	}
	o.Log = CapVerbosity(o.Log)
	if o.ServedTimeout == 0 {
		o.ServedTimeout = DefaultServedTimeout
	}
	if o.outage == nil {
		o.outage = reconciler.NewOutage(o.Log)
	}
}

// DefaultServedTimeout is Options.ServedTimeout's default: controller-runtime's
// cache sync timeout, which would otherwise end a start whose kinds are not
// served, with a less helpful message.
const DefaultServedTimeout = 2 * time.Minute

// ParseNamespaces reads WATCH_NAMESPACE: a comma-separated list, empty for all.
func ParseNamespaces(v string) []string {
	var out []string
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// New builds the operator's manager: its cache of the CRs and of the
// releases' objects, the Helm client over that cache, one controller per
// watch and, for the kinds whose backup kinds are served, the backup
// controllers.
func New(opts Options) (manager.Manager, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.Config = countRequests(opts.Config, newRequestCounter(metrics.Registry))
	backups, schedules, err := servedBackups(opts.Config, opts.Watches)
	if err != nil {
		return nil, err
	}
	cacheOpts, err := cacheOptions(opts, backups, schedules)
	if err != nil {
		return nil, err
	}
	mgr, err := newManager(&opts, cacheOpts)
	if err != nil {
		return nil, err
	}
	helm, err := newHelm(mgr, opts)
	if err != nil {
		return nil, err
	}
	for _, w := range opts.Watches {
		if err := addController(mgr, helm, w, opts); err != nil {
			return nil, err
		}
	}
	if err := mgr.Add(&storageMigration{cfg: opts.Config, mapper: mgr.GetRESTMapper(), kinds: ownKinds(opts.Watches, backups, schedules),
		namespaces: opts.Namespaces, log: opts.Log.WithName("storage-migration")}); err != nil {
		return nil, err
	}
	for _, gvk := range backups {
		if err := addBackup(mgr, helm, gvk, schedules[gvk], opts); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// validate checks the options New needs, and keeps of the watches the
// shard's.
func (o *Options) validate() error {
	if len(o.Watches) == 0 {
		return fmt.Errorf("no watches: nothing to reconcile")
	}
	ws, err := shardWatches(o.Watches, o.Shard)
	if err != nil {
		return err
	}
	o.Watches = ws
	return o.Lease.validate()
}

// cacheOptions say what the manager's cache holds: the CRs and only the
// objects of releases (labelled by the post-renderer), so that memory does
// not grow with unrelated objects, and the backup kinds served. managedFields
// are often the largest part of an object and nothing here reads them.
func cacheOptions(opts Options, backups []schema.GroupVersionKind, schedules map[schema.GroupVersionKind]bool) (cache.Options, error) {
	everything := cache.ByObject{Label: labels.Everything(), Transform: cache.TransformStripManagedFields()}
	byObject := map[client.Object]cache.ByObject{}
	for _, w := range opts.Watches {
		byObject[crObject(w.GroupVersionKind())] = cache.ByObject{Label: w.LabelSelector, Transform: cache.TransformStripManagedFields()}
	}
	for _, gvk := range backups {
		for _, o := range backup.Objects(gvk) {
			byObject[o] = everything
		}
		if schedules[gvk] {
			byObject[backup.ScheduleObject(gvk)] = everything
		}
	}
	managed, err := managedSelector(opts.Shard)
	if err != nil {
		return cache.Options{}, err
	}
	// Pods carry the managed label through their workload's template, but
	// not the shard's (relabelling a template would roll the pods).
	byObject[crObject(corev1.SchemeGroupVersion.WithKind("Pod"))] = cache.ByObject{Label: labels.SelectorFromSet(managedLabels(""))}
	cacheOpts := cache.Options{
		// A shard's operator caches only its own shard's objects and
		// release records (see shardLabels).
		DefaultLabelSelector: managed,
		ByObject:             byObject,
		// The objects of releases are held as views: their metadata and
		// readiness, what a reconcile of a release in sync reads (see
		// release.ViewTransform).
		DefaultTransform: release.ViewTransform,
	}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return cacheOpts, nil
}

// newManager makes the manager: its cache gated on the API server's
// presence, its leader election under this process's identity (which it
// sets in opts when empty), its metrics and health servers.
func newManager(opts *Options, cacheOpts cache.Options) (manager.Manager, error) {
	gate, err := newServerGate(opts.Config)
	if err != nil {
		return nil, err
	}
	var lock resourcelock.Interface
	leaderEvents := &lazyRecorder{}
	if opts.LeaderElection {
		if opts.identity == "" {
			if opts.identity, err = newIdentity(); err != nil {
				return nil, err
			}
		}
		if lock, err = leaseLock(opts.Config, *opts, opts.identity, leaderEvents); err != nil {
			return nil, err
		}
	}
	metricsOpts, err := opts.Metrics.serverOptions(opts.MetricsBindAddress)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Logger: opts.Log,
		Cache:  cacheOpts,
		// Informers resume the moment the API server is back from an outage.
		NewCache:       gate.newCache,
		MapperProvider: newMemoMapper,
		// CRs and release objects are unstructured: read them from the cache too.
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// The Lease under this process's identity (see leaseLock).
		LeaderElectionResourceLockInterface: lock,
		Controller:                          controllerConfig(),
		LeaseDuration:                       &opts.Lease.LeaseDuration,
		RenewDeadline:                       &opts.Lease.RenewDeadline,
		RetryPeriod:                         &opts.Lease.RetryPeriod,
		// A manager stopped by its context ends Run, and `run` exits then,
		// which makes releasing the Lease safe: a rolling update hands over
		// at the standby's next attempt instead of a LeaseDuration later.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	leaderEvents.set(mgr.GetEventRecorderFor(opts.identity))
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// newHelm makes the Helm client of every controller: it reads through the
// manager's cache, pods too where the operator may watch them (for the
// health of workloads), and Helm's records through an index of them.
func newHelm(mgr manager.Manager, opts Options) (*release.Client, error) {
	clientOpts := []release.ClientOption{release.WithReader(mgr.GetClient())}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	podsOK, err := mayWatchPods(ctx, opts.Config, opts.Namespaces)
	cancel()
	switch {
	case err != nil:
		opts.Log.Error(err, "the health of workloads comes from their own status only")
	case !podsOK:
		opts.Log.Info("the health of workloads comes from their own status only: the operator may not list and watch pods")
	default:
		if err := release.IndexPods(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
		clientOpts = append(clientOpts, release.WithPodReader(mgr.GetClient()))
	}
	// Every Helm record of the namespaces, so that an install need not list
	// them to prove its name free; ours carry the managed label.
	records, err := release.NewRecordIndex(opts.Config, opts.Namespaces)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(records); err != nil {
		return nil, err
	}
	return release.NewClient(opts.Config, append(clientOpts,
		// Records this operator writes carry the managed label and its
		// shard's; records without them are read from the API server.
		release.WithRecordIndex(records, managedLabels(opts.Shard)),
		release.WithLogger(opts.Log))...)
}

// addBackup adds the backup and restore controllers of a watched kind.
func addBackup(mgr manager.Manager, helm *release.Client, gvk schema.GroupVersionKind, schedules bool, opts Options) error {
	name := strings.ToLower(gvk.Kind) + "-backup"
	return backup.Add(mgr, backup.Options{
		Watched: gvk, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Releases: helm,
		Config: opts.Config, MoverImage: opts.MoverImage, Schedules: schedules,
		Recorder: mgr.GetEventRecorderFor(name),
		Log:      opts.Log.WithName(name),
	}, opts.SkipNameValidation)
}

// ownKinds are the kinds whose CRDs the operator owns: the watched ones
// and their backup kinds where served.
func ownKinds(ws []watches.Watch, backups []schema.GroupVersionKind, schedules map[schema.GroupVersionKind]bool) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, w := range ws {
		out = append(out, w.GroupVersionKind())
	}
	for _, gvk := range backups {
		out = append(out, backupapi.BackupKind(gvk), backupapi.RestoreKind(gvk))
		if schedules[gvk] {
			out = append(out, backupapi.ScheduleKind(gvk))
		}
	}
	return out
}

// servedBackups are the watched kinds whose backup and restore kinds the
// API server serves (their CRDs installed with the operator's), and those
// of them whose schedule kind it serves too.
func servedBackups(cfg *rest.Config, ws []watches.Watch) ([]schema.GroupVersionKind, map[schema.GroupVersionKind]bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	var out []schema.GroupVersionKind
	schedules := map[schema.GroupVersionKind]bool{}
	for _, w := range ws {
		ok, err := backup.Served(dc, w.GroupVersionKind())
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		out = append(out, w.GroupVersionKind())
		if schedules[w.GroupVersionKind()], err = backup.SchedulesServed(dc, w.GroupVersionKind()); err != nil {
			return nil, nil, err
		}
	}
	return out, schedules, nil
}

// Run waits until discovery serves the watched kinds, then runs the
// operator until ctx ends.
//
// A leader that cannot renew its Lease within the renew deadline (the API
// server away longer than that) must stop reconciling: a standby may take
// over. Run then ends that term (see fence), waits for the API server and
// stands again, as the same candidate, instead of exiting: so an outage
// neither restarts the pod nor waits out a crash loop's backoff.
func Run(ctx context.Context, opts Options) error {
	opts.defaults()
	if opts.LeaderElection && opts.identity == "" {
		var err error
		if opts.identity, err = newIdentity(); err != nil {
			return err
		}
	}
	for term := 0; ; term++ {
		if term > 0 {
			opts.Log.Info("stepped down as leader: the Lease was not renewed in time; standing again once the API server answers", "renewDeadline", opts.Lease.RenewDeadline.String())
			if err := waitAPIServer(ctx, opts.Config); err != nil {
				return err
			}
			opts.outage.Reached()
			// The last term's servers close as it ends, not before Start returns.
			if err := waitBindable(ctx, opts.MetricsBindAddress, opts.HealthProbeBindAddress, opts.PprofBindAddress); err != nil {
				return err
			}
			// The controllers of the last term keep their names.
			opts.SkipNameValidation = true
		}
		err := runTerm(ctx, opts)
		if ctx.Err() != nil || !errors.Is(err, errLeadershipLost) {
			return err
		}
	}
}

// errLeadershipLost is a term ended by a Lease not renewed in time.
var errLeadershipLost = errors.New("leader election lost")

// runTerm runs one manager, its clients behind a fence closed when it
// returns; a lost leadership returns errLeadershipLost.
func runTerm(ctx context.Context, opts Options) error {
	f := newFence()
	defer func() {
		// Requests end at once when cancelled; the bound is for safety.
		drain, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.close(drain); err != nil {
			opts.Log.Error(err, "requests of the ended term still in flight")
		}
	}()
	opts.Config = f.wrap(opts.Config)
	// Before New: the manager's cache maps the watched kinds as it is built.
	if err := waitServed(ctx, opts); err != nil {
		return err
	}
	mgr, err := New(opts)
	if err != nil {
		return err
	}
	err = mgr.Start(ctx)
	// controller-runtime says so only in its message.
	if err != nil && err.Error() == errLeadershipLost.Error() {
		return errLeadershipLost
	}
	return err
}

// waitServed waits, for at most opts.ServedTimeout, until discovery serves
// the kind of every watch: the operator's REST mapper starts from
// discovery, and a kind it cannot map fails the start. It reads discovery
// only, which the operator's ServiceAccount may do, not the CRDs.
func waitServed(ctx context.Context, opts Options) error {
	gvks := make([]schema.GroupVersionKind, 0, len(opts.Watches))
	for _, w := range opts.Watches {
		gvks = append(gvks, w.GroupVersionKind())
	}
	if err := crdready.WaitKinds(ctx, opts.Config, gvks, crdready.Options{Timeout: opts.ServedTimeout}); err != nil {
		return fmt.Errorf("waiting for the watched kinds: %w", err)
	}
	return nil
}

func crObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func addController(mgr manager.Manager, helm *release.Client, w watches.Watch, opts Options) error {
	gvk := w.GroupVersionKind()
	name := strings.ToLower(gvk.Kind) + "." + gvk.Group + "." + gvk.Version
	maxConcurrent := opts.MaxConcurrentReconciles
	if w.MaxConcurrentReconciles != nil {
		maxConcurrent = *w.MaxConcurrentReconciles
	}
	deps := &dependents{owner: gvk, cache: mgr.GetCache()}
	warmup := true
	var onDeployed func(context.Context, string, []schema.GroupVersionKind)
	if w.WatchesDependents() {
		onDeployed = deps.ensure
	}
	states := newReleaseMetrics(gvk.Kind, metrics.Registry)
	if err := mgr.Add(states); err != nil {
		return err
	}
	r := reconciler.New(reconciler.Options{
		OnDeployed:      onDeployed,
		Metrics:         states,
		Releases:        releasemetrics.New(releasemetrics.Options{Kind: gvk.Kind, RepairAction: release.ActionRepair, Registerer: metrics.Registry, SeriesLimit: opts.ReleaseSeriesLimit}),
		Watch:           w,
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Helm:            helm,
		Recorder:        mgr.GetEventRecorderFor(name),
		ReconcilePeriod: opts.ReconcilePeriod,
		Backoff:         opts.Backoff,
		DriftLimit:      opts.DriftLimit,
		Outage:          opts.outage,
		Labels:          shardLabels(opts.Shard),
		Log:             opts.Log.WithName(name),
	})
	c, err := builder.ControllerManagedBy(mgr).
		Named(name).
		For(crObject(gvk), builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
		)).
		// A standby replica watches the CRs too (warm-up), so that on a
		// takeover the new leader starts from a full cache and a queue in
		// which the CRs changed since its start come first.
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent, SkipNameValidation: &opts.SkipNameValidation, EnableWarmup: &warmup}).
		Build(r)
	if err != nil {
		return fmt.Errorf("creating the controller for %s: %w", gvk, err)
	}
	deps.controller = c
	return nil
}

// dependents adds a watch for each kind a release creates, the first time a
// release of that kind is deployed; its events reconcile the owning CR.
type dependents struct {
	owner      schema.GroupVersionKind
	cache      cache.Cache
	controller controller.Controller

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	// digests are the releases whose kinds are all watched.
	digests map[string]bool
}

// ensure is called after every reconcile of a release in sync with the
// kinds of its objects: a digest already handled (same chart and values, so
// the same kinds) costs a map lookup.
func (d *dependents) ensure(ctx context.Context, digest string, kinds []schema.GroupVersionKind) {
	d.mu.Lock()
	if d.digests == nil {
		d.digests = map[string]bool{}
	}
	known := digest != "" && d.digests[digest]
	d.mu.Unlock()
	if known {
		return
	}
	failed := false
	for _, gvk := range kinds {
		d.mu.Lock()
		if d.watched == nil {
			d.watched = map[schema.GroupVersionKind]bool{}
		}
		if d.watched[gvk] {
			d.mu.Unlock()
			continue
		}
		d.watched[gvk] = true
		d.mu.Unlock()
		src := source.Kind(d.cache, crObject(gvk), handler.TypedEnqueueRequestsFromMapFunc(d.owners), dependentChanged{})
		if err := d.controller.Watch(src); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "watching dependent objects", "kind", gvk)
			d.mu.Lock()
			delete(d.watched, gvk)
			d.mu.Unlock()
			failed = true
		}
	}
	if !failed && digest != "" {
		d.mu.Lock()
		d.digests[digest] = true
		d.mu.Unlock()
	}
}

// dependentChanged lets through the events of dependent objects that can
// matter to their CR: creations, deletions, changes to what the release set
// (spec, data, labels, annotations) and changes of readiness. Status updates
// that leave readiness as it was (a Deployment's controllers write several
// per rollout) would only queue reconciles that find nothing to do.
type dependentChanged struct {
	predicate.TypedFuncs[*unstructured.Unstructured]
}

func (dependentChanged) Update(e event.TypedUpdateEvent[*unstructured.Unstructured]) bool {
	o, n := e.ObjectOld, e.ObjectNew
	if o == nil || n == nil {
		return true
	}
	if o.GetGeneration() != n.GetGeneration() {
		return true
	}
	if n.GetGeneration() == 0 {
		// Kinds without a generation (ConfigMaps, Services, HPAs) bump
		// nothing on a change of data: their views' content digests tell.
		if c := release.Content(n); c == "" || c != release.Content(o) {
			return true
		}
	}
	if !release.SameMetadata(o, n) {
		return true
	}
	return ready(o) != ready(n)
}

// ready reads the readiness of an object or of its cached view.
func ready(u *unstructured.Unstructured) bool {
	st, _ := release.Readiness(u)
	return st == status.CurrentStatus
}

// owners maps a dependent object to its CR: its controller owner reference,
// or operator-sdk's primary-resource annotations.
func (d *dependents) owners(_ context.Context, obj *unstructured.Unstructured) []reconcile.Request {
	if ref := release.ControllerOf(obj); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == d.owner.Group && ref.Kind == d.owner.Kind {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}}
		}
	}
	ann := obj.GetAnnotations()
	if ann[reconciler.PrimaryResourceTypeAnnotation] != d.owner.GroupKind().String() {
		return nil
	}
	ns, name, ok := strings.Cut(ann[reconciler.PrimaryResourceAnnotation], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// controllerConfig is what every controller of the operator shares.
// controller-runtime v0.24's priority queue, its default, can deadlock when
// the controller stops (a ready item handed to a worker that has already
// left holds the queue's lock), and the operator then hangs for the whole
// shutdown grace period; the fix came after the v0.24 line. The plain
// rate-limited queue has no such race, and the operator relies on nothing
// the priority queue adds.
func controllerConfig() config.Controller {
	return config.Controller{UsePriorityQueue: ptr.To(false)}
}
