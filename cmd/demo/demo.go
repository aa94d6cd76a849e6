package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot"
	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
)

// Options configure a run of the demo.
type Options struct {
	// Dir holds the project, the catalog, the logs and, unless Kubeconfig is
	// set, the local cluster's state. What a previous run left there, apart
	// from the cluster's cache, is removed first.
	Dir string
	// Binary is the chartpilot binary the steps run. Default: this program.
	Binary string
	// Kubeconfig points at a running local cluster with OLM to use. Empty
	// starts the local cluster in Dir/cluster and stops it at the end.
	Kubeconfig string
	// ClusterLogDir, with Kubeconfig, is the directory of that cluster's
	// component logs (kube-apiserver.log, olm.log...). When a step fails
	// they are copied into Dir/logs/cluster, as those of the cluster the
	// demo starts itself always are (its state, logs included, is wiped
	// when it stops). Empty with Kubeconfig: they are not copied.
	ClusterLogDir string
	// Namespace the operator is installed in and watches. Default hello-demo.
	Namespace string
	// Node is the kind of node of the cluster the demo starts (without
	// Kubeconfig): cluster.NodeAuto (the default) takes the journey through
	// images on a real node where this host can run one.
	Node cluster.NodeKind
	// OLM is which OLM the journey goes through: cluster.OLMv0 (a
	// Subscription), cluster.OLMv1 (a ClusterExtension) or cluster.OLMBoth
	// (OLM v0's journey, then OLM v1's in the same cluster with what the
	// first built). Empty: both on the cluster the demo starts, v0 on a
	// cluster it is given (Kubeconfig), which must run OLM v1 for v1.
	OLM cluster.OLMVersions
	// Timeout bounds each wait. Default 3 minutes.
	Timeout time.Duration
	// Out receives the progress and the summary.
	Out io.Writer
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("demo: no directory")
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = abs
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the chartpilot binary: %w", err)
		}
	}
	if o.Namespace == "" {
		o.Namespace = "hello-demo"
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Node == "" {
		o.Node = cluster.NodeAuto
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}

// Summary is what the demo did.
type Summary struct {
	Steps []Step `json:"steps"`
	// SubscriptionToSucceeded is the time from creating the Subscription to
	// the CSV's Succeeded phase.
	SubscriptionToSucceeded time.Duration `json:"subscriptionToSucceeded"`
	// PublishToUpgraded is the time from publishing v0.2.0 in the catalog to
	// the custom resource's release upgraded by the new operator version.
	PublishToUpgraded time.Duration `json:"publishToUpgraded"`
	Total             time.Duration `json:"total"`
	// Capabilities are the capability levels the evidence proved, by
	// release version: the climb from v0.1.0 to v0.2.0.
	Capabilities map[string]string `json:"capabilities"`
	// Revisions are the release revisions the Hello was deployed at, in
	// order: its install, then the new operator's upgrade.
	Revisions []int64 `json:"revisions"`
	// Kept are the kinds of the release's objects the upgrade updated in
	// place (the same UIDs).
	Kept []string `json:"kept"`
	// OLMv1 is the journey through OLM v1, when it ran.
	OLMv1 *OLMv1Summary `json:"olmv1,omitempty"`
}

// OLMv1Summary is what the journey through OLM v1 did.
type OLMv1Summary struct {
	// ExtensionToInstalled is the time from creating the ClusterExtension
	// to its Installed condition.
	ExtensionToInstalled time.Duration `json:"extensionToInstalled"`
	// PublishToUpgraded is the time from the catalog image of v0.2.0 (its
	// publish, or in the journey after OLM v0's, its use) to the custom
	// resource's release upgraded by the new operator version.
	PublishToUpgraded time.Duration `json:"publishToUpgraded"`
	// Revisions and Kept are as the Summary's, for the release OLM v1's
	// operator made.
	Revisions []int64  `json:"revisions"`
	Kept      []string `json:"kept"`
	// Gone are the objects uninstall was checked to have left nothing of.
	Gone []string `json:"gone"`
	// Duration is the time of OLM v1's steps.
	Duration time.Duration `json:"duration"`
}

// Missing says what the summary lacks of a whole journey through OLM v1:
// timings, release revisions 1 then 2, the objects the upgrade kept (same
// UIDs), an uninstall checked to leave nothing. Empty when nothing is.
func (s *OLMv1Summary) Missing() []string {
	if s == nil {
		return []string{"the journey did not go through OLM v1"}
	}
	var out []string
	if s.ExtensionToInstalled <= 0 || s.PublishToUpgraded <= 0 || s.Duration <= 0 {
		out = append(out, fmt.Sprintf("OLM v1's timings: %+v", *s))
	}
	if !slices.Equal(s.Revisions, []int64{1, 2}) {
		out = append(out, fmt.Sprintf("release revisions %v, want [1 2]", s.Revisions))
	}
	if !slices.Equal(s.Kept, []string{"ConfigMap", "Service", "Deployment"}) {
		out = append(out, fmt.Sprintf("objects the upgrade kept (same UIDs): %v", s.Kept))
	}
	for _, want := range []string{"ClusterExtension", "ClusterCatalog", "the Hello CRD", "the installer's ClusterRole and ClusterRoleBinding", "namespace hello-demo"} {
		if !slices.ContainsFunc(s.Gone, func(g string) bool { return strings.HasPrefix(g, want) }) {
			out = append(out, fmt.Sprintf("uninstall not checked to leave nothing of %s (checked: %v)", want, s.Gone))
		}
	}
	return out
}

const (
	project = "hello-operator"
	pkg     = project
	channel = "stable"
	crName  = "hello-sample"
)

// demo is one run's state.
type demo struct {
	opts       Options
	r          *runner
	clusterLog string // the directory of the cluster components' logs
	keptLogs   string // where a failed run copied them
	sum        *Summary
	kubeconfig string
	dyn        dynamic.Interface
	olm        client.Client // knows OLM's types
	projectDir string
	catalogDir string
	serve      *process
	servePort  int
	operator   *process
	watchNS    string // the namespaces OLM's OperatorGroup targets
	uids       map[string]string
	published  time.Time // when v0.2.0 was published
	// node is set on a real node: the journey goes through images.
	node *realNode
	// registry holds the images: the real node's, or on a kwok node the
	// one OLM v1's journey starts on loopback.
	registry string
	// registryPort is the real node's registry's, picked before the
	// cluster starts.
	registryPort int
	// clusterOLM is the OLM the cluster this run starts runs: OLM v0 until
	// OLM v1 joins it, when the journey goes through both.
	clusterOLM cluster.OLMVersions
	// tools are the cluster's components once built; built and builtV1
	// say what the build of the core and of OLM v1's did.
	tools          *toolchain.Installation
	built, builtV1 string
	registrySrv    *http.Server // the kwok node's registry
	cs             kubernetes.Interface
	digests        map[string]string // the operator image's digest by version
	// previous is the copy of the v0.1.0 project once v0.2.0 is made.
	previous string
	// v1 is set while the journey goes through OLM v1: what waitRelease
	// and checkUpgrade find goes there.
	v1      *OLMv1Summary
	v1First int // the index of OLM v1's first step
}

// Run runs the journey and prints its summary. It leaves nothing running.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	// Both streams of the journey's start write to it.
	opts.Out = &syncWriter{w: opts.Out}
	d := &demo{
		opts:       opts,
		sum:        &Summary{},
		projectDir: filepath.Join(opts.Dir, project),
		catalogDir: filepath.Join(opts.Dir, "catalog"),
		r:          &runner{out: opts.Out, logDir: filepath.Join(opts.Dir, "logs")},
		digests:    map[string]string{},
	}
	for _, stale := range []string{d.projectDir, d.catalogDir, d.r.logDir, filepath.Join(opts.Dir, "chart")} {
		if err := os.RemoveAll(stale); err != nil {
			return nil, err
		}
	}
	if err := d.resolveOLM(); err != nil {
		return nil, err
	}
	began := time.Now()
	err := d.journey(ctx)
	d.r.stopAll()
	if d.registrySrv != nil {
		d.registrySrv.Close()
	}
	d.sum.Steps, d.sum.Total = d.r.steps, time.Since(began).Round(10*time.Millisecond)
	if d.v1 != nil {
		for _, s := range d.sum.Steps[d.v1First:] {
			d.v1.Duration += s.Duration
		}
	}
	d.printSummary(err)
	return d.sum, err
}

// step is one step of the journey.
type step struct {
	title string
	fn    func(context.Context) (string, error)
}

func (d *demo) journey(ctx context.Context) (err error) {
	defer d.stopCluster(&err)
	steps, stages, err := d.plan()
	if err != nil {
		return err
	}
	d.r.total = len(steps)
	return d.twoStreams(ctx, stages, steps)
}

// twoStreams runs the build of the cluster's components beside the steps,
// which wait for the stages of the build they need. The first error of
// either stream cancels the other; both have ended when it returns.
func (d *demo) twoStreams(ctx context.Context, stages []*stage, steps []step) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return buildStages(gctx, stages) })
	g.Go(func() error { return d.runSteps(gctx, steps) })
	return g.Wait()
}

// stage is a part of the components' build; the steps that need what it
// builds wait for it.
type stage struct {
	build func(context.Context) error
	done  chan struct{} // closed once it ended, err set
	err   error
}

func newStage(build func(context.Context) error) *stage {
	return &stage{build: build, done: make(chan struct{})}
}

// then makes fn wait for the stage first: the step's time includes the
// wait.
func (s *stage) then(fn func(context.Context) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		<-s.done
		if s.err != nil {
			return "", s.err
		}
		return fn(ctx)
	}
}

// buildStages builds the stages in order. Every stage ends, so that no
// step waits for ever: after a failure (or a cancel), with its error.
func buildStages(ctx context.Context, stages []*stage) error {
	var err error
	for _, s := range stages {
		if err == nil {
			err = s.build(ctx)
		}
		s.err = err
		close(s.done)
	}
	return err
}

// runSteps runs steps in order until one fails. A step cut short because
// ctx ended says why it ended (the other stream's error, or an interrupt)
// rather than how its command died.
func (d *demo) runSteps(ctx context.Context, steps []step) error {
	for _, s := range steps {
		err := d.r.step(s.title, func() (string, error) {
			detail, err := s.fn(ctx)
			if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
				err = fmt.Errorf("stopped: %w", cause)
			}
			return detail, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// plan orders the journey's steps and the stages of the components' build
// they wait for. The steps that need no cluster come first, while the
// cluster's core builds; its start waits for that. When the journey goes
// through OLM v1 after OLM v0 on a cluster of its own, OLM v1's components
// build during OLM v0's journey and join the cluster after it. The node
// decides the path (the images' on a real node), the OLM which journeys.
func (d *demo) plan() ([]step, []*stage, error) {
	images := d.throughImages()
	if images {
		if err := d.pickRegistry(); err != nil {
			return nil, nil, err
		}
	}
	own := d.opts.Kubeconfig == ""
	d.clusterOLM = d.opts.OLM
	if own && d.opts.OLM == cluster.OLMBoth {
		d.clusterOLM = cluster.OLMv0
	}
	all, v1, offline := d.journeySteps(images)
	core := newStage(d.buildCore)
	stages := []*stage{core}
	steps := slices.Concat(all[:offline], []step{{d.startTitle(images), core.then(d.startCluster)}}, all[offline:])
	if d.clusterOLM != d.opts.OLM {
		later := newStage(d.buildOLMv1)
		stages = append(stages, later)
		steps = append(steps, step{"Add OLM v1 to the cluster: its components built during OLM v0's journey", later.then(d.addOLMv1)})
	}
	return append(steps, v1...), stages, nil
}

// journeySteps are the steps of the path (through images or not) and the
// OLM: all but OLM v1's after OLM v0's, those (v1), and how many of all's
// first need no cluster.
func (d *demo) journeySteps(images bool) (all, v1 []step, offline int) {
	if !images {
		switch d.opts.OLM {
		case cluster.OLMv1:
			all = d.kwokV1AloneSteps()
		case cluster.OLMBoth:
			all, v1 = d.kwokSteps(), d.kwokV1Steps()
		default:
			all = d.kwokSteps()
		}
		return all, v1, len(d.kwokOfflineSteps())
	}
	switch d.opts.OLM {
	case cluster.OLMv1:
		all = d.v1BuildSteps()
	case cluster.OLMBoth:
		all, v1 = d.imageSteps(), d.v1Steps()
	default:
		all = d.imageSteps()
	}
	return all, v1, len(d.imageOfflineSteps())
}

// pickRegistry picks the real node's registry's address: it goes into what
// is made while the components build (the operator image's name, the
// bundle, the sample), and the cluster listens on it.
func (d *demo) pickRegistry() error {
	port, err := cluster.FreePort()
	if err != nil {
		return fmt.Errorf("picking the registry's port: %w", err)
	}
	d.registryPort, d.registry = port, cluster.RegistryAddr(port)
	d.node = &realNode{registry: d.registry}
	// The project's Makefile builds the catalog in the project.
	d.catalogDir = filepath.Join(d.projectDir, "catalog")
	return nil
}

// startTitle is the title of the cluster's start.
func (d *demo) startTitle(images bool) string {
	if images {
		return fmt.Sprintf("Start the local cluster (Kubernetes 1.36, a real node, %s in pods)", olmTitle(d.clusterOLM))
	}
	return fmt.Sprintf("Start the local cluster (Kubernetes 1.36, a kwok node, %s)", olmTitle(d.clusterOLM))
}

// olmTitle names the OLM the cluster runs.
func olmTitle(v cluster.OLMVersions) string {
	switch v {
	case cluster.OLMv1:
		return "OLM v1"
	case cluster.OLMBoth:
		return "OLM v0 and OLM v1"
	}
	return "OLM v0"
}

// resolveOLM settles which OLM the journey goes through: by default both
// on the cluster it starts, OLM v0 on a cluster it is given (which may run
// no OLM v1).
func (d *demo) resolveOLM() error {
	switch d.opts.OLM {
	case "":
		d.opts.OLM = cluster.OLMBoth
		if d.opts.Kubeconfig != "" {
			d.opts.OLM = cluster.OLMv0
		}
		return nil
	case cluster.OLMv0, cluster.OLMv1, cluster.OLMBoth:
		return nil
	}
	return fmt.Errorf("demo: unknown OLM %q: want v0, v1 or both", d.opts.OLM)
}

// servesOLMv1 checks that a cluster the demo is given serves OLM v1's API.
func servesOLMv1(cs kubernetes.Interface, kubeconfig string) error {
	res, err := cs.Discovery().ServerResourcesForGroupVersion(extension.GroupVersion.String())
	if err == nil && slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Kind == extension.ExtensionKind }) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("asking the cluster for OLM v1's API: %w", err)
	}
	return fmt.Errorf("the cluster of %s runs no OLM v1 (it serves no %s of %s): start it with chartpilot cluster up --olm=both, or run the demo with --olm=v0",
		kubeconfig, extension.ExtensionKind, extension.GroupVersion)
}

// throughImages says whether the cluster the demo starts has a real node.
func (d *demo) throughImages() bool {
	switch {
	case d.opts.Kubeconfig != "":
		return false
	case d.opts.Node == cluster.NodeAuto:
		return cluster.RealNodePossible() == nil
	}
	return d.opts.Node == cluster.NodeReal
}

// kwokSteps are the journey on a kwok node: bundles published inline, the
// catalog served from the host, the operator run on the host as its
// ServiceAccount (pods are simulated).
func (d *demo) kwokSteps() []step {
	return append(d.kwokOfflineSteps(), []step{
		{"Scorecard v0.1.0 (static and in-cluster tests); bundle again with the evidence", d.scorecard("0.1.0")},
		{"Publish v0.1.0 in a file-based catalog (inline bundle)", d.publish("0.1.0")},
		{"Serve the catalog over OLM's registry API: chartpilot catalog serve", d.serveCatalog},
		{"Subscribe: CatalogSource, OperatorGroup, kubectl create -f subscription.yaml", d.subscribe},
		{"Run the operator as the ServiceAccount OLM created: chartpilot run", d.runOperator("0.1.0")},
		{"Create a Hello; wait for Deployed and Ready", d.createCR},
		{"Release v0.2.0: chart change, generate, bundle, scorecard with upgrade test, publish", d.release},
		{"OLM upgrades the CSV to v0.2.0", d.waitCSVUpgrade},
		{"The operator v0.2.0 upgrades the release; nothing is lost", d.upgradeOperator},
		{"Unsubscribe and clean up", d.cleanup},
	}...)
}

// kwokOfflineSteps begin the journey on a kwok node; they need no cluster.
func (d *demo) kwokOfflineSteps() []step {
	return []step{
		{"Scaffold the operator from the hello chart: chartpilot init", d.scaffold},
		{"Generate bundle v0.1.0: make bundle", d.bundle("0.1.0")},
	}
}

// stopCluster stops the cluster this run started, keeping its logs first
// when the run failed.
func (d *demo) stopCluster(errp *error) {
	err := *errp
	defer func() { *errp = err }()
	{
		var own *cluster.Cluster // the cluster this run started
		var cerr error
		if d.opts.Kubeconfig == "" && d.kubeconfig != "" {
			own, cerr = cluster.New(cluster.Options{StateDir: filepath.Join(d.opts.Dir, "cluster")})
		}
		if err != nil {
			// Before the cluster stops: its logs go with its state.
			if kerr := d.keepClusterLogs(own); kerr != nil {
				err = errors.Join(err, fmt.Errorf("keeping the cluster's logs: %w", kerr))
			}
		}
		if own != nil {
			cerr = own.Down(context.Background(), cluster.DownOptions{Wipe: true})
		}
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the local cluster: %w", cerr))
		}
	}
}

// buildCore builds what the cluster starts with, all at once (one go build
// per tools module rather than a second round when the cluster starts;
// nothing when cached).
func (d *demo) buildCore(ctx context.Context) (err error) {
	own := d.opts.Kubeconfig == ""
	d.tools, d.built, err = d.buildComponents(ctx, "the local cluster's components", "components", own && d.node != nil, own && d.clusterOLM != cluster.OLMv0)
	return err
}

// buildOLMv1 builds OLM v1's components, after the core's.
func (d *demo) buildOLMv1(ctx context.Context) (err error) {
	_, d.builtV1, err = d.buildComponents(ctx, "OLM v1's components", "components-olmv1", d.node != nil, true)
	return err
}

// buildComponents builds the cluster's components (the real node's with
// node, OLM v1's with olmv1) and says what it did: the go command's output
// goes to the log file logName, the start of each go build and a line a
// minute to the screen.
func (d *demo) buildComponents(ctx context.Context, what, logName string, node, olmv1 bool) (*toolchain.Installation, string, error) {
	log, err := d.r.logFile(logName)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	fmt.Fprintf(d.opts.Out, "[build] %s, beside the steps (log: %s)\n", what, log.Name())
	began, built := time.Now(), 0
	tools, err := toolchain.Ensure(ctx, toolchain.Options{Out: log, Log: log, Heartbeat: time.Minute, Node: node, OLMv1: olmv1,
		Progress: func(p toolchain.Progress) {
			if p.Elapsed == 0 {
				built += len(p.Building)
				fmt.Fprintf(d.opts.Out, "[build] go build %d of %d, %s: %s; %d components left after it\n",
					p.Build, p.Builds, p.Group, strings.Join(p.Building, ", "), p.Left)
				return
			}
			fmt.Fprintf(d.opts.Out, "[build] go build %d of %d, %s: %s, %d packages compiled\n",
				p.Build, p.Builds, p.Group, p.Elapsed.Round(time.Second), p.Compiled)
		}})
	if err != nil {
		return nil, "", fmt.Errorf("building the local cluster's components (log: %s): %w", log.Name(), err)
	}
	detail := "components cached"
	if built > 0 {
		detail = fmt.Sprintf("%d components built in %s", built, time.Since(began).Round(time.Second))
	}
	fmt.Fprintf(d.opts.Out, "[build] done: %s\n", detail)
	return tools, detail, nil
}

// ownCluster is the cluster the demo starts, with the OLM it runs.
func (d *demo) ownCluster() (*cluster.Cluster, error) {
	return cluster.New(cluster.Options{StateDir: filepath.Join(d.opts.Dir, "cluster"), Out: indent(d.opts.Out),
		Node: d.opts.Node, OLM: d.clusterOLM, Ports: cluster.Ports{Registry: d.registryPort}})
}

// addOLMv1 starts OLM v1 in the running cluster: Up starts what it lacks
// and leaves the rest running.
func (d *demo) addOLMv1(ctx context.Context) (string, error) {
	d.clusterOLM = cluster.OLMBoth
	c, err := d.ownCluster()
	if err != nil {
		return "", err
	}
	if err := c.Up(ctx); err != nil {
		return "", fmt.Errorf("adding OLM v1 to the cluster: %w", err)
	}
	return d.builtV1 + "; catalogd and operator-controller running", nil
}

func (d *demo) startCluster(ctx context.Context) (string, error) {
	d.r.env = append(d.r.env, "PATH="+d.tools.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	detail := d.built + "; using " + d.opts.Kubeconfig
	d.kubeconfig, d.clusterLog = d.opts.Kubeconfig, d.opts.ClusterLogDir
	if d.kubeconfig == "" {
		c, err := d.ownCluster()
		if err != nil {
			return "", err
		}
		d.clusterLog = filepath.Dir(c.LogFile(cluster.OLM))
		// A fresh cluster each run: what an earlier run left (even one that
		// was interrupted) must not change this one.
		if err := c.Down(ctx, cluster.DownOptions{Wipe: true}); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
			return "", err
		}
		d.kubeconfig = c.KubeconfigPath()
		if err := c.Up(ctx); err != nil {
			return "", err
		}
		detail = fmt.Sprintf("%s; a %s node, kubeconfig %s", d.built, c.NodeKind(), d.kubeconfig)
		switch {
		case d.node != nil && c.NodeKind() != cluster.NodeReal:
			return "", fmt.Errorf("the cluster started with a %s node, the journey through images needs a real one", c.NodeKind())
		case d.node != nil:
			d.node.opm = c.Image(images.OPM)
			detail += ", registry " + d.registry + ": the journey goes through images"
		default:
			detail += ": pods are simulated, bundles are published inline"
		}
	}
	d.r.env = append(d.r.env, "KUBECONFIG="+d.kubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		return "", err
	}
	if d.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return "", err
	}
	if d.olm, err = olm.NewClient(cfg); err != nil {
		return "", err
	}
	if d.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return "", err
	}
	if d.opts.Kubeconfig != "" && d.opts.OLM != cluster.OLMv0 {
		if err := servesOLMv1(d.cs, d.kubeconfig); err != nil {
			return "", err
		}
	}
	return detail, nil
}

func (d *demo) scaffold(ctx context.Context) (string, error) {
	chartDir := filepath.Join(d.opts.Dir, "chart", chartpilot.ExampleChart)
	if err := os.MkdirAll(chartDir, 0o755); err != nil {
		return "", err
	}
	if err := chartpilot.WriteExampleChart(chartDir); err != nil {
		return "", err
	}
	if _, err := d.r.run(ctx, d.opts.Dir, d.opts.Binary, "init", d.projectDir, "--chart", chartDir, "--domain", "example.com"); err != nil {
		return "", err
	}
	return "project " + d.projectDir, nil
}

// keepClusterLogs copies the cluster components' logs into the run's logs
// (Dir/logs/cluster), as they are now, with the status of each component of
// own (the cluster this run started, if any) in status.txt: a component
// that died says so there.
func (d *demo) keepClusterLogs(own *cluster.Cluster) error {
	if d.clusterLog == "" {
		return nil
	}
	entries, err := os.ReadDir(d.clusterLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the cluster never started
	}
	if err != nil {
		return err
	}
	dst := filepath.Join(d.r.logDir, "cluster")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(d.clusterLog, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	d.keptLogs = dst
	if own == nil {
		return nil
	}
	var b strings.Builder
	for _, st := range own.Status(context.Background()) {
		fmt.Fprintf(&b, "%-24s running=%-5v healthy=%-5v pid=%d %s\n", st.Name, st.Running, st.Healthy, st.PID, st.Error)
	}
	return os.WriteFile(filepath.Join(dst, "status.txt"), []byte(b.String()), 0o644)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// indent prefixes the lines written to w, for progress inside a step.
func indent(w io.Writer) io.Writer { return &indenter{w: w, bol: true} }

type indenter struct {
	w   io.Writer
	bol bool
}

func (in *indenter) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line == "" {
			continue
		}
		if in.bol {
			if _, err := io.WriteString(in.w, "      "); err != nil {
				return 0, err
			}
		}
		if _, err := io.WriteString(in.w, line); err != nil {
			return 0, err
		}
		in.bol = strings.HasSuffix(line, "\n")
	}
	return len(p), nil
}

func (d *demo) printSummary(err error) {
	w := tabwriter.NewWriter(d.opts.Out, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "\nSummary\n\n")
	for i, s := range d.sum.Steps {
		result := s.Detail
		if s.Err != "" {
			result = "FAILED: " + strings.SplitN(s.Err, "\n", 2)[0]
		}
		fmt.Fprintf(w, "  %2d\t%s\t%s\t%s\n", i+1, s.Duration, s.Title, result)
	}
	w.Flush()
	fmt.Fprintln(d.opts.Out)
	if d.sum.SubscriptionToSucceeded > 0 {
		fmt.Fprintf(d.opts.Out, "  Subscription to CSV Succeeded:        %s\n", d.sum.SubscriptionToSucceeded)
	}
	if d.sum.PublishToUpgraded > 0 {
		fmt.Fprintf(d.opts.Out, "  Publish of v0.2.0 to release upgraded: %s\n", d.sum.PublishToUpgraded)
	}
	if v1 := d.sum.OLMv1; v1 != nil {
		if v1.ExtensionToInstalled > 0 {
			fmt.Fprintf(d.opts.Out, "  OLM v1: ClusterExtension created to Installed:  %s\n", v1.ExtensionToInstalled)
		}
		if v1.PublishToUpgraded > 0 {
			fmt.Fprintf(d.opts.Out, "  OLM v1: publish of v0.2.0 to release upgraded: %s\n", v1.PublishToUpgraded)
		}
		fmt.Fprintf(d.opts.Out, "  OLM v1's steps took %s\n", v1.Duration)
	}
	status := "the whole journey passed"
	if err != nil {
		status = "FAILED; logs in " + d.r.logDir
		if d.keptLogs != "" {
			status += " (the cluster components' in " + d.keptLogs + ")"
		}
	}
	fmt.Fprintf(d.opts.Out, "  Total: %s, %s\n", d.sum.Total, status)
}
