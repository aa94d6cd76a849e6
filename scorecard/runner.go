package scorecard

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
// without one) stage by stage; a parallel stage's tests run side by side
// (see runStage). The error is for what prevents any test from running (no
// bundle, a bad config); a test that cannot run is in the error state.
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
	r := &run{opts: opts, bundle: b, crds: newCRDSet(opts.Config, opts.WaitTime)}
	list := v1alpha3.NewTestList()
	list.Items = make([]v1alpha3.Test, len(tests))
	for start := 0; start < len(tests); {
		end := start
		for end < len(tests) && tests[end].stage == tests[start].stage {
			end++
		}
		r.runStage(ctx, tests[start:end], list.Items[start:end])
		start = end
	}
	return list, nil
}

// runStage runs one stage's tests into out: one after another if the
// stage is not parallel, else side by side, except
//   - a test that installs the previous bundle (upgrade, and rbac with
//     FromBundleDir): its CRDs replace those the others share, so it runs
//     alone once they are done;
//   - the cluster tests of a bundle whose releases reach outside their
//     namespace (see sharedObjects): they take turns.
func (r *run) runStage(ctx context.Context, tests []plannedTest, out []v1alpha3.Test) {
	if !tests[0].parallel {
		for i, t := range tests {
			out[i] = r.runOne(ctx, t, "")
		}
		return
	}
	beside, after := r.split(tests)
	cluster := 0
	for _, i := range beside {
		if tests[i].test.cluster {
			cluster++
		}
	}
	turns, note := "", ""
	if cluster > 1 && r.opts.Config != nil {
		note = fmt.Sprintf("ran beside the stage's %d other cluster tests", cluster-1)
		if turns = r.sharedObjects(); turns != "" {
			note = "ran one at a time: " + turns
		}
	}
	var clusterMu sync.Mutex
	var wg sync.WaitGroup
	for _, i := range beside {
		wg.Go(func() {
			if !tests[i].test.cluster {
				out[i] = r.runOne(ctx, tests[i], "")
				return
			}
			if turns != "" {
				clusterMu.Lock()
				defer clusterMu.Unlock()
			}
			out[i] = r.runOne(ctx, tests[i], note)
		})
	}
	wg.Wait()
	for _, i := range after {
		out[i] = r.runOne(ctx, tests[i], "ran alone after the stage's other tests: it installs the previous bundle, whose CRDs replace those they share")
	}
}

// split parts a parallel stage's tests into those that run side by side
// and those that run alone after them: the tests that install the
// previous bundle, when there is one.
func (r *run) split(tests []plannedTest) (beside, after []int) {
	for i, t := range tests {
		if t.test.previous && r.opts.FromBundleDir != "" {
			after = append(after, i)
		} else {
			beside = append(beside, i)
		}
	}
	return beside, after
}

// runOne runs a test; note, when set, is the result log's first line.
func (r *run) runOne(ctx context.Context, t plannedTest, note string) v1alpha3.Test {
	tr := *r
	if len(t.spec.Entrypoint) > 2 {
		tr.args = t.spec.Entrypoint[2:]
	}
	res := t.test.run(ctx, &tr)
	res.Name = t.test.name
	res.CreationTimestamp = metav1.Now()
	if note != "" {
		res.Log = note + "\n" + res.Log
	}
	item := v1alpha3.NewTest()
	item.Spec = t.spec
	item.Status.Results = []v1alpha3.TestResult{res}
	return item
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
