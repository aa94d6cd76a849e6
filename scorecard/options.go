package scorecard

import (
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// DefaultWaitTime bounds each wait of a cluster test, as operator-sdk's
// --wait-time bounds each test.
const DefaultWaitTime = 30 * time.Second

// Options configure List and Run. Zero values take the defaults noted.
type Options struct {
	// BundleDir is the registry+v1 bundle directory. Required.
	BundleDir string
	// Selector chooses the tests by their config.yaml labels; nil selects all.
	Selector labels.Selector
	// Config reaches the cluster as its admin, for the chartpilot suite;
	// without it the cluster tests end in the error state.
	Config *rest.Config
	// ProjectDir holds the watches.yaml and charts the operator runs.
	// Default: BundleDir's parent (a project's bundle/ directory).
	ProjectDir string
	// FromBundleDir is the previous release's bundle, which
	// chartpilot-upgrade upgrades from; FromProjectDir its project,
	// default FromBundleDir's parent.
	FromBundleDir, FromProjectDir string
	// WaitTime bounds each wait for the cluster (a CRD established, a CR
	// Deployed and Ready, objects gone). Default DefaultWaitTime.
	WaitTime time.Duration
	// Log receives the in-process operator's logs. Default: discarded.
	Log logr.Logger
	// OperatorFromImage runs the operator as a cluster would: the CSV's
	// Deployments, from their image, in each test's namespace, instead of
	// in this process as the CSV's ServiceAccount. The cluster's nodes
	// must run pods and pull the image; the rbac test then reads the
	// refusals from the operator's logs, and the insights test, which
	// scrapes the in-process operator's metrics, is not supported.
	OperatorFromImage bool
}

func (o *Options) defaults() {
	if o.Selector == nil {
		o.Selector = labels.Everything()
	}
	if o.ProjectDir == "" {
		o.ProjectDir = filepath.Dir(filepath.Clean(o.BundleDir))
	}
	if o.FromBundleDir != "" && o.FromProjectDir == "" {
		o.FromProjectDir = filepath.Dir(filepath.Clean(o.FromBundleDir))
	}
	if o.WaitTime <= 0 {
		o.WaitTime = DefaultWaitTime
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
}

// run is what a test sees: the options and the loaded bundle.
type run struct {
	opts   Options
	bundle *Bundle
	// crds are the bundle's CRDs the cluster tests hold.
	crds *crdSet
	// args are the test's arguments: its config entry's entrypoint after
	// the test's name.
	args []string
}
