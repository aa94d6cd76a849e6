package scorecard

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// args are the test's arguments: its config entry's entrypoint after
	// the test's name.
	args []string
}

// List returns the tests Run would run, without results.
func List(opts Options) (v1alpha3.TestList, error) {
	opts.defaults()
	tests, err := planFor(opts)
	if err != nil {
		return v1alpha3.TestList{}, err
	}
	list := v1alpha3.NewTestList()
	for _, t := range tests {
		item := v1alpha3.NewTest()
		item.Spec = t.spec
		list.Items = append(list.Items, item)
	}
	return list, nil
}

// Run runs the selected tests of the bundle's config (the default set
// without one) stage by stage; a stage's tests run concurrently if it is
// parallel, except the cluster tests, which run one at a time. The error
// is for what prevents any test from running (no bundle, a bad config); a
// test that cannot run is in the error state.
func Run(ctx context.Context, opts Options) (v1alpha3.TestList, error) {
	opts.defaults()
	tests, err := planFor(opts)
	if err != nil {
		return v1alpha3.TestList{}, err
	}
	b, err := LoadBundle(opts.BundleDir)
	if err != nil {
		return v1alpha3.TestList{}, err
	}
	r := &run{opts: opts, bundle: b}
	list := v1alpha3.NewTestList()
	list.Items = make([]v1alpha3.Test, len(tests))
	// Cluster tests share the cluster's CRDs and the process's controller
	// names: one at a time.
	var clusterMu sync.Mutex
	runOne := func(i int) {
		t := tests[i]
		if t.test.cluster {
			clusterMu.Lock()
			defer clusterMu.Unlock()
		}
		tr := *r
		if len(t.spec.Entrypoint) > 2 {
			tr.args = t.spec.Entrypoint[2:]
		}
		res := t.test.run(ctx, &tr)
		res.Name = t.test.name
		res.CreationTimestamp = metav1.Now()
		item := v1alpha3.NewTest()
		item.Spec = t.spec
		item.Status.Results = []v1alpha3.TestResult{res}
		list.Items[i] = item
	}
	for start := 0; start < len(tests); {
		end := start
		for end < len(tests) && tests[end].stage == tests[start].stage {
			end++
		}
		if tests[start].parallel {
			var wg sync.WaitGroup
			for i := start; i < end; i++ {
				wg.Go(func() { runOne(i) })
			}
			wg.Wait()
		} else {
			for i := start; i < end; i++ {
				runOne(i)
			}
		}
		start = end
	}
	return list, nil
}

func planFor(opts Options) ([]plannedTest, error) {
	if opts.BundleDir == "" {
		return nil, fmt.Errorf("no bundle directory")
	}
	cfg, found, err := LoadConfig(opts.BundleDir)
	if err != nil {
		return nil, err
	}
	source := "the built-in default configuration"
	if found {
		source = filepath.Join(opts.BundleDir, filepath.FromSlash(ConfigFile))
	}
	return plan(cfg, source, opts.Selector)
}

// ExitCode is the scorecard command's exit status for results: 1 if a
// test failed, else 2 if a test could not run (error state), else 0.
func ExitCode(list v1alpha3.TestList) int {
	code := 0
	for _, t := range list.Items {
		for _, r := range t.Status.Results {
			switch r.State {
			case v1alpha3.FailState:
				return 1
			case v1alpha3.PassState:
			default:
				code = 2
			}
		}
	}
	return code
}
