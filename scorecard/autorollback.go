package scorecard

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
)

// The reference the default breaking patch gives every image: a registry on
// a loopback port nothing listens on, so that any node fails to pull it at
// once (ErrImagePull, then ImagePullBackOff) without reaching out.
const (
	brokenRegistry   = "127.0.0.1:1"
	brokenRepository = "chartpilot/autorollback"
	brokenTag        = "broken"
	brokenImage      = brokenRegistry + "/" + brokenRepository + ":" + brokenTag
)

// kwokNodeAnnotation is kwok's mark on the nodes it simulates: their pods
// are Running and Ready whatever their image, so nothing breaks there.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// errCannotProve: the cluster cannot show what the test proves; the test
// ends in the error state, not as a failure of the operator.
var errCannotProve = errors.New("cannot be proven on this cluster")

// autorollbackArgs are chartpilot-autorollback's arguments, after its name
// in the config entry's entrypoint:
//
//	entrypoint: [scorecard-test, chartpilot-autorollback, '--spec-patch={"image":{"tag":"0.0.0-bad"}}', --health-deadline=20s]
type autorollbackArgs struct {
	// specPatch is merged into each CR's spec to break its operand; nil
	// takes the default (see breakingPatch).
	specPatch map[string]any
	// deadline is the health deadline the test gives each CR (annotation
	// reconciler.AnnotationHealthDeadline). Default: half WaitTime, at most
	// maxDefaultDeadline.
	deadline time.Duration
}

// maxDefaultDeadline bounds the default health deadline: the broken upgrade
// is rolled back at its deadline (an image that cannot be pulled is no
// regression before it), and the test should not take minutes for that.
const maxDefaultDeadline = 20 * time.Second

func parseAutorollbackArgs(args []string, waitTime time.Duration) (autorollbackArgs, error) {
	out := autorollbackArgs{deadline: min(waitTime/2, maxDefaultDeadline)}
	fs := flag.NewFlagSet(scorecardtests.ChartpilotAutorollback, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	patch := fs.String("spec-patch", "", "a JSON or YAML merge patch of the CR's spec that breaks the operand")
	fs.DurationVar(&out.deadline, "health-deadline", out.deadline, "the health deadline given to each CR")
	if err := fs.Parse(args); err != nil {
		return out, fmt.Errorf("%s arguments %q: %w", scorecardtests.ChartpilotAutorollback, args, err)
	}
	if fs.NArg() > 0 {
		return out, fmt.Errorf("%s arguments: unexpected %q (want --spec-patch=PATCH, --health-deadline=DURATION)", scorecardtests.ChartpilotAutorollback, fs.Args())
	}
	if out.deadline <= 0 {
		return out, fmt.Errorf("%s arguments: --health-deadline %s: must be positive", scorecardtests.ChartpilotAutorollback, out.deadline)
	}
	if *patch != "" {
		if err := yaml.Unmarshal([]byte(*patch), &out.specPatch); err != nil || out.specPatch == nil {
			return out, fmt.Errorf("%s arguments: --spec-patch is not a YAML or JSON object: %v", scorecardtests.ChartpilotAutorollback, err)
		}
	}
	return out, nil
}

// breakingPatch is the default patch of a CR's spec that breaks any chart
// following the usual values convention: every `image` of the chart's
// default values, a string or a {registry, repository, tag} map, is set to
// a reference no node can pull. It returns the paths it set, for the log.
func breakingPatch(values map[string]any) (map[string]any, []string) {
	var paths []string
	var walk func(m map[string]any, path string) map[string]any
	walk = func(m map[string]any, path string) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			p := strings.TrimPrefix(path+"."+k, ".")
			switch v := v.(type) {
			case string:
				if k == "image" {
					out[k] = brokenImage
					paths = append(paths, p)
				}
			case map[string]any:
				if k == "image" {
					if img := brokenImageValues(v); img != nil {
						out[k] = img
						paths = append(paths, p)
						continue
					}
				}
				if sub := walk(v, p); len(sub) > 0 {
					out[k] = sub
				}
			}
		}
		return out
	}
	patch := walk(values, "")
	slices.Sort(paths)
	return patch, paths
}

// brokenImageValues breaks an image given as a map, nil when the map has
// no repository.
func brokenImageValues(img map[string]any) map[string]any {
	if _, ok := img["repository"]; !ok {
		return nil
	}
	out := map[string]any{"repository": brokenRegistry + "/" + brokenRepository, "tag": brokenTag}
	if _, ok := img["registry"]; ok {
		out["registry"], out["repository"] = brokenRegistry, brokenRepository
	}
	if _, ok := img["digest"]; ok {
		out["digest"] = ""
	}
	return out
}

// autorollbackTest (chartpilot-autorollback): each alm-example, once its
// release is recorded healthy, gets a spec patch that breaks its operand;
// the operator rolls the upgrade back within the health deadline, to the
// healthy revision, says why in the CR's status (ReleaseFailed,
// UpgradeUnhealthy) and an event, and the operand is Ready again.
func autorollbackTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "autorollback", func(ctx context.Context, c *clusterRun) error {
		args, err := parseAutorollbackArgs(run.args, c.opts.WaitTime)
		if err != nil {
			return fmt.Errorf("%w: %w", errCannotProve, err)
		}
		if err := c.nodesRunContainers(ctx); err != nil {
			return err
		}
		in, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
		if err != nil {
			return fmt.Errorf("installing: %w", err)
		}
		var errs []error
		for _, cr := range in.crs {
			patch := args.specPatch
			if patch == nil {
				var paths []string
				patch, paths = breakingPatch(chartValues(in.op, cr))
				if len(paths) == 0 {
					return fmt.Errorf("%w: the chart of %s has no image value to break: give a patch of the CR's spec that does, as an argument of the test in config.yaml (--spec-patch=...)", errCannotProve, cr.GetKind())
				}
				c.res.logf("%s %s: breaking the images at %s", cr.GetKind(), cr.GetName(), strings.Join(paths, ", "))
			}
			errs = append(errs, c.autorollback(ctx, cr, patch, args.deadline))
		}
		return errors.Join(errs...)
	})
}

// chartValues are the default values of the chart of cr's kind.
func chartValues(op *runningOperator, cr *unstructured.Unstructured) map[string]any {
	for _, w := range op.watches {
		if w.GroupVersionKind() == cr.GroupVersionKind() && w.LoadedChart != nil {
			return w.LoadedChart.Values
		}
	}
	return nil
}

// nodesRunContainers checks that some node of the cluster runs containers:
// on nodes kwok simulates, a broken image runs as well as any.
func (c *clusterRun) nodesRunContainers(ctx context.Context) error {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the nodes: %w", err)
	}
	simulated := 0
	for _, n := range nodes.Items {
		if n.Annotations[kwokNodeAnnotation] != "" {
			simulated++
		}
	}
	if len(nodes.Items) == simulated {
		return fmt.Errorf("%w: no node runs containers (%d node(s), %d simulated by kwok), so no upgrade can break the operand; run it on a cluster with real nodes (chartpilot cluster up, as root)", errCannotProve, len(nodes.Items), simulated)
	}
	return nil
}

// autorollback breaks one CR's operand and checks the operator's answer.
func (c *clusterRun) autorollback(ctx context.Context, cr *unstructured.Unstructured, patch map[string]any, deadline time.Duration) error {
	id := cr.GetKind() + " " + cr.GetName()
	ri, err := c.resource(cr.GroupVersionKind(), c.ns)
	if err != nil {
		return err
	}
	merge := func(p map[string]any) error {
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, cr.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
		return err
	}
	if err := merge(map[string]any{"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: deadline.String()}}}); err != nil {
		return fmt.Errorf("%s: setting its health deadline: %w", id, err)
	}
	good, err := c.waitHealthyRevision(ctx, cr.GetName(), deadline+c.opts.WaitTime)
	if err != nil {
		return fmt.Errorf("%s: the installed revision was not recorded healthy within its deadline (%s): %w", id, deadline, err)
	}
	c.res.logf("%s: revision %d recorded healthy; breaking it", id, good.Version)
	began := time.Now()
	if err := merge(map[string]any{"spec": patch}); err != nil {
		return fmt.Errorf("%s: applying the breaking patch: %w", id, err)
	}
	var last crState
	var lastHealth any
	err = wait.PollUntilContextTimeout(ctx, pollInterval, deadline+c.opts.WaitTime, true, func(ctx context.Context) (bool, error) {
		cur, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = stateOf(cur)
		lastHealth, _, _ = unstructured.NestedFieldNoCopy(cur.Object, "status", "health")
		failed := last.condition(reconciler.TypeReleaseFailed)
		back := last.release != nil && last.release.Digest == good.Labels[release.DigestLabel] && last.release.Version > good.Version+1
		return failed != nil && failed.Status == metav1.ConditionTrue && failed.Reason == reconciler.ReasonUpgradeUnhealthy && back, nil
	})
	if err != nil {
		return fmt.Errorf("%s: the broken upgrade was not rolled back within %s (health deadline %s): %s; status.health %v", id, time.Since(began).Round(time.Second), deadline, last, lastHealth)
	}
	took := time.Since(began)
	reason := last.condition(reconciler.TypeReleaseFailed).Message
	c.res.logf("%s: broken upgrade rolled back to revision %d's chart and values (now revision %d) %s after the patch: %s", id, good.Version, last.release.Version, took.Round(100*time.Millisecond), reason)
	var errs []error
	if err := c.waitEvent(ctx, cr.GetName(), reconciler.EventUnhealthyRolledBack); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	if _, err := c.waitDeployed(ctx, []*unstructured.Unstructured{cr}, nil); err != nil {
		errs = append(errs, fmt.Errorf("%s: the operand is not Ready again after the rollback: %w", id, err))
	}
	return errors.Join(errs...)
}

// waitHealthyRevision waits until the deployed revision of release name is
// recorded healthy by the operator, and returns it.
func (c *clusterRun) waitHealthyRevision(ctx context.Context, name string, timeout time.Duration) (*releaseRecord, error) {
	var got *releaseRecord
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		rels, err := c.deployedRecords(name)
		if err != nil || len(rels) == 0 {
			return false, nil
		}
		got = &releaseRecord{Version: rels[0].Version, Labels: rels[0].Labels}
		switch got.Labels[release.HealthLabel] {
		case release.HealthHealthy:
			return true, nil
		case release.HealthUnhealthy:
			return false, fmt.Errorf("revision %d was found unhealthy", got.Version)
		}
		return false, nil
	})
	if err != nil && got != nil {
		return nil, fmt.Errorf("revision %d labels %v: %w", got.Version, got.Labels, err)
	}
	return got, err
}

// releaseRecord is what the test reads of a Helm revision.
type releaseRecord struct {
	Version int
	Labels  map[string]string
}

// waitEvent waits for an event of reason on the CR name.
func (c *clusterRun) waitEvent(ctx context.Context, name, reason string) error {
	var reasons []string
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		reasons = reasons[:0]
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		return slices.Contains(reasons, reason), nil
	})
	if err != nil {
		return fmt.Errorf("no %s event (events: %v)", reason, reasons)
	}
	return nil
}
