package scorecard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// installed is what install leaves for the next steps.
type installed struct {
	op  *runningOperator
	crs []*unstructured.Unstructured
}

// install installs bundle b with the operator of project, creates its
// alm-examples and waits until they are Deployed and Ready.
func (c *clusterRun) install(ctx context.Context, b *Bundle, project string) (*installed, error) {
	crs, err := b.CustomResources()
	if err != nil {
		return nil, err
	}
	crs = releaseCRs(crs)
	sa, err := c.installBundle(ctx, b)
	if err != nil {
		return nil, err
	}
	op, err := c.startOperator(ctx, b, project, sa)
	if err != nil {
		return nil, err
	}
	created, err := c.createCRs(ctx, crs)
	if err != nil {
		return &installed{op: op, crs: created}, err
	}
	_, err = c.waitDeployed(ctx, created, nil)
	return &installed{op: op, crs: created}, err
}

// releaseCRs drops the backup and restore examples (see operator/backup):
// they make no release, and the backup-restore test makes its own.
func releaseCRs(crs []*unstructured.Unstructured) []*unstructured.Unstructured {
	kinds := map[schema.GroupKind]bool{}
	for _, cr := range crs {
		kinds[cr.GroupVersionKind().GroupKind()] = true
	}
	var out []*unstructured.Unstructured
	for _, cr := range crs {
		if w, ok := backupapi.Watched(cr.GroupVersionKind()); !ok || !kinds[w.GroupKind()] {
			out = append(out, cr)
		}
	}
	return out
}

// upgrade installs the previous bundle (FromBundleDir) and its operator,
// creates besides its alm-examples a CR of every values set the previous
// project knows (valueSets: its samples, its charts' ci/ files), then
// switches to bundle b and its project's operator. Every CR must survive:
// accepted by the new CRD as it is (a dry-run create, which ratcheting
// does not spare), its spec as before in the version it was written in and
// in the one the new operator watches (nothing pruned), and, for each CR
// deployed before, Deployed and Ready on the new chart at the same or a
// later revision, with every object of its release in the cluster.
func (c *clusterRun) upgrade(ctx context.Context, b *Bundle) (*installed, error) {
	if c.opts.FromBundleDir == "" {
		return nil, errNoPreviousBundle
	}
	from, err := LoadBundle(c.opts.FromBundleDir)
	if err != nil {
		return nil, err
	}
	if from.LoadErr != nil {
		return nil, fmt.Errorf("previous bundle: %w", from.LoadErr)
	}
	old, err := c.install(ctx, from, c.opts.FromProjectDir)
	if err != nil {
		return old, fmt.Errorf("installing the previous bundle %s: %w", c.opts.FromBundleDir, err)
	}
	deployed, all, err := c.createValueSets(ctx, old)
	if err != nil {
		return old, err
	}
	specs := map[string]map[string]any{}
	before := map[string]int{}
	for _, cr := range all {
		if specs[cr.GetName()], err = c.spec(ctx, cr, cr.GroupVersionKind().Version); err != nil {
			return old, err
		}
	}
	for _, cr := range deployed {
		rev, _, err := c.releaseObjects(cr.GetName())
		if err != nil {
			return old, err
		}
		before[cr.GetName()] = rev
	}
	if err := old.op.stop(); err != nil {
		return old, fmt.Errorf("stopping the previous operator: %w", err)
	}
	c.res.logf("previous operator stopped; upgrading to %s", b.Dir)
	sa, err := c.installBundle(ctx, b)
	if err != nil {
		return old, err
	}
	op, err := c.startOperator(ctx, b, c.opts.ProjectDir, sa)
	if err != nil {
		return old, err
	}
	served, err := servedVersions(b)
	if err != nil {
		return old, err
	}
	now := &installed{op: op, crs: deployed}
	var lost []error
	for _, cr := range all {
		lost = append(lost, c.survives(ctx, cr, specs[cr.GetName()], op.watches, served))
	}
	if err := errors.Join(lost...); err != nil {
		return now, err
	}
	charts := map[string]string{}
	for _, w := range op.watches {
		if w.LoadedChart != nil {
			charts[w.GroupVersionKind().GroupKind().String()] = w.LoadedChart.Metadata.Name + "-" + w.LoadedChart.Metadata.Version
		}
	}
	for _, cr := range deployed {
		want := charts[cr.GroupVersionKind().GroupKind().String()]
		states, err := c.waitDeployed(ctx, []*unstructured.Unstructured{cr}, func(st crState) bool {
			return st.release != nil && st.release.Chart == want && st.release.Version >= before[cr.GetName()]
		})
		if err != nil {
			if st, ok := states[cr.GetName()]; ok && st.release != nil && st.release.Chart != want {
				return now, fmt.Errorf("%s %s still runs chart %s (revision %d), not %s: %w", cr.GetKind(), cr.GetName(), st.release.Chart, st.release.Version, want, err)
			}
			return now, err
		}
		rev, objs, err := c.releaseObjects(cr.GetName())
		if err != nil {
			return now, err
		}
		for _, o := range objs {
			ok, err := c.exists(ctx, o)
			if err != nil {
				return now, err
			}
			if !ok {
				return now, fmt.Errorf("%s of release %s (revision %d) is missing after the upgrade", o, cr.GetName(), rev)
			}
		}
		c.res.logf("%s %s: revision %d -> %d, chart %s, %d objects present", cr.GetKind(), cr.GetName(), before[cr.GetName()], rev, want, len(objs))
	}
	return now, nil
}

// createValueSets creates, beside the alm-examples old installed, a CR of
// each values set of the previous project, and waits for them. deployed
// are the CRs Deployed and Ready with the previous operator (a values set
// it cannot deploy is no upgrade's doing: logged, and only checked for
// being accepted and kept); all are every CR.
func (c *clusterRun) createValueSets(ctx context.Context, old *installed) (deployed, all []*unstructured.Unstructured, err error) {
	deployed, all = slices.Clone(old.crs), slices.Clone(old.crs)
	sets, err := valueSets(c.opts.FromProjectDir, old.crs)
	if err != nil || len(sets) == 0 {
		return deployed, all, err
	}
	var crs []*unstructured.Unstructured
	for _, s := range sets {
		crs = append(crs, s.cr)
		c.res.logf("values set %s: %s %s", s.source, s.cr.GetKind(), s.cr.GetName())
	}
	created, err := c.createCRs(ctx, crs)
	all = append(all, created...)
	if err != nil {
		return deployed, all, fmt.Errorf("with the previous bundle: %w", err)
	}
	for _, cr := range created {
		if _, err := c.waitDeployed(ctx, []*unstructured.Unstructured{cr}, nil); err != nil {
			c.res.logf("%s %s not deployed by the previous operator (only its acceptance and spec are checked): %v", cr.GetKind(), cr.GetName(), err)
			continue
		}
		deployed = append(deployed, cr)
	}
	return deployed, all, nil
}

// spec reads a CR's spec in version v.
func (c *clusterRun) spec(ctx context.Context, cr *unstructured.Unstructured, v string) (map[string]any, error) {
	gvk := cr.GroupVersionKind()
	gvk.Version = v
	ri, err := c.resource(gvk, c.ns)
	if err != nil {
		return nil, err
	}
	cur, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading %s %s in %s: %w", cr.GetKind(), cr.GetName(), v, err)
	}
	spec, _, _ := unstructured.NestedMap(cur.Object, "spec")
	return spec, nil
}

// servedVersions are the versions each CRD of bundle b serves, by kind.
func servedVersions(b *Bundle) (map[schema.GroupKind][]string, error) {
	crds, err := b.v1CRDs()
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupKind][]string{}
	for _, crd := range crds {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				out[gk] = append(out[gk], v.Name)
			}
		}
	}
	return out, nil
}

// survives checks one CR after the new bundle's CRDs are installed: the
// new CRD accepts it as it is, and its spec, read in the version it was
// written in (while the new CRD serves it) and in the one the new
// operator watches, lost nothing.
func (c *clusterRun) survives(ctx context.Context, cr *unstructured.Unstructured, before map[string]any, ws []watches.Watch, served map[schema.GroupKind][]string) error {
	gk := cr.GroupVersionKind().GroupKind()
	var versions []string
	if slices.Contains(served[gk], cr.GroupVersionKind().Version) {
		versions = append(versions, cr.GroupVersionKind().Version)
	}
	for _, w := range ws {
		if w.GroupVersionKind().GroupKind() == gk && !slices.Contains(versions, w.Version) {
			versions = append(versions, w.Version)
		}
	}
	id := cr.GetKind() + " " + cr.GetName()
	var errs []error
	for _, v := range versions {
		after, err := c.spec(ctx, cr, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s after the upgrade: %w", id, err))
			continue
		}
		if lost := lostFields("spec", before, after); len(lost) > 0 {
			errs = append(errs, fmt.Errorf("%s read in %s after the upgrade: %s: the new CRD drops what the CR holds (keep the fields, or add a new API version: chartpilot create api --version)", id, v, strings.Join(lost, ", ")))
		}
		if err := c.accepted(ctx, cr, v); err != nil {
			errs = append(errs, fmt.Errorf("%s is not accepted in %s by the new CRD: %w", id, v, err))
		}
	}
	if len(errs) == 0 {
		c.res.logf("%s kept by the upgrade: accepted and its spec unchanged in %s", id, strings.Join(versions, ", "))
	}
	return errors.Join(errs...)
}

// accepted creates a copy of the CR, as read in version v, with a dry run:
// the API server validates it whole against the new CRD (an update would
// let unchanged invalid fields through: validation ratcheting).
func (c *clusterRun) accepted(ctx context.Context, cr *unstructured.Unstructured, v string) error {
	gvk := cr.GroupVersionKind()
	gvk.Version = v
	ri, err := c.resource(gvk, c.ns)
	if err != nil {
		return err
	}
	cur, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cur.GetAPIVersion(), "kind": cur.GetKind(), "spec": cur.Object["spec"]}}
	probe.SetName(cr.GetName() + "-upgrade-check")
	probe.SetNamespace(c.ns)
	_, err = ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// errNoPreviousBundle: chartpilot-upgrade needs the bundle it upgrades from.
var errNoPreviousBundle = errors.New("no previous bundle to upgrade from: pass --from-bundle DIR (the last release's bundle), or deselect the test with -l 'test!=chartpilot-upgrade-test'")

// uninstall deletes the CRs and checks that the operator uninstalled their
// releases: the CRs gone, no revision left in Helm's storage, and no
// object of the releases left in the cluster.
func (c *clusterRun) uninstall(ctx context.Context, in *installed) error {
	type owned struct {
		cr   *unstructured.Unstructured
		objs []objectRef
	}
	var all []owned
	for _, cr := range in.crs {
		_, objs, err := c.releaseObjects(cr.GetName())
		if err != nil {
			return err
		}
		all = append(all, owned{cr, objs})
	}
	began := time.Now()
	var errs []error
	for _, o := range all {
		ri, err := c.resource(o.cr.GroupVersionKind(), c.ns)
		if err != nil {
			return err
		}
		if err := ignoreNotFound(ri.Delete(ctx, o.cr.GetName(), metav1.DeleteOptions{})); err != nil {
			return fmt.Errorf("deleting %s %s: %w", o.cr.GetKind(), o.cr.GetName(), err)
		}
	}
	for _, o := range all {
		ri, _ := c.resource(o.cr.GroupVersionKind(), c.ns)
		var last *unstructured.Unstructured
		err := c.poll(ctx, func(ctx context.Context) (bool, error) {
			cur, err := ri.Get(ctx, o.cr.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err == nil {
				last = cur
			}
			return false, nil
		})
		if err != nil {
			msg := fmt.Sprintf("%s %s still exists %s after its deletion", o.cr.GetKind(), o.cr.GetName(), c.opts.WaitTime)
			if last != nil {
				msg += fmt.Sprintf(": finalizers %v, %s", last.GetFinalizers(), stateOf(last))
			}
			errs = append(errs, errors.New(msg))
			c.mu.Lock()
			c.stuck[o.cr.GetName()] = true
			c.mu.Unlock()
			continue
		}
		var left []string
		err = c.poll(ctx, func(ctx context.Context) (bool, error) {
			left = left[:0]
			if stored, err := c.releaseStored(o.cr.GetName()); err != nil || stored {
				left = append(left, "its revisions in Helm's storage")
			}
			for _, ref := range o.objs {
				if ok, err := c.exists(ctx, ref); err != nil || ok {
					left = append(left, ref.String())
				}
			}
			return len(left) == 0, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s of %s %s left behind after uninstall: %v", o.cr.GetName(), o.cr.GetKind(), o.cr.GetName(), left))
			continue
		}
		c.res.logf("%s %s uninstalled: %d objects and the release gone", o.cr.GetKind(), o.cr.GetName(), len(o.objs))
	}
	if len(errs) == 0 {
		c.res.logf("uninstalled in %s", time.Since(began).Round(10*time.Millisecond))
	}
	return errors.Join(errs...)
}

// clusterTest runs body in a fresh clusterRun and makes its result: an
// error from setting up is the error state, one from body a failure.
func clusterTest(ctx context.Context, run *run, name string, body func(context.Context, *clusterRun) error) v1alpha3.TestResult {
	res := newResult()
	// A test's own deadline: a few waits' worth, whatever it does.
	ctx, cancel := context.WithTimeout(ctx, 8*run.opts.WaitTime)
	defer cancel()
	c, err := newClusterRun(ctx, run, name, res)
	defer c.finish()
	if err != nil {
		res.error(err)
		return res.TestResult
	}
	if err := body(ctx, c); err != nil {
		if errors.Is(err, errNoPreviousBundle) || errors.Is(err, errCannotProve) {
			res.error(err)
		} else {
			res.fail("%v", err)
		}
	}
	if res.State != v1alpha3.PassState || name == scorecardtests.ChartpilotRBAC {
		return res.TestResult
	}
	for _, d := range c.denied.Denied() {
		res.suggest("the operator was forbidden to %s (see the chartpilot-rbac test)", d)
	}
	return res.TestResult
}

// installTest (chartpilot-install): the bundle's CRDs and permissions
// installed, the operator running as its ServiceAccount, every alm-example
// reaches Deployed and Ready.
func installTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "install", func(ctx context.Context, c *clusterRun) error {
		_, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
		return err
	})
}

// upgradeTest (chartpilot-upgrade): CRs installed with the previous
// bundle's operator stay Deployed and Ready, with all their objects, once
// the new bundle's operator takes over.
func upgradeTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "upgrade", func(ctx context.Context, c *clusterRun) error {
		_, err := c.upgrade(ctx, run.bundle)
		return err
	})
}

// uninstallTest (chartpilot-uninstall): deleting the CRs uninstalls their
// releases and leaves none of their objects.
func uninstallTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "uninstall", func(ctx context.Context, c *clusterRun) error {
		in, err := c.install(ctx, run.bundle, run.opts.ProjectDir)
		if err != nil {
			return fmt.Errorf("installing: %w", err)
		}
		return c.uninstall(ctx, in)
	})
}

// rbacTest (chartpilot-rbac): through install (from the previous bundle
// and upgrade, given --from-bundle) and uninstall, the API server refuses
// the operator nothing; each refusal is named with the rule that is missing.
func rbacTest(ctx context.Context, run *run) v1alpha3.TestResult {
	return clusterTest(ctx, run, "rbac", func(ctx context.Context, c *clusterRun) error {
		var in *installed
		var err error
		if run.opts.FromBundleDir != "" {
			in, err = c.upgrade(ctx, run.bundle)
		} else {
			in, err = c.install(ctx, run.bundle, run.opts.ProjectDir)
		}
		if err == nil {
			err = c.uninstall(ctx, in)
		}
		c.logForbiddenEvents(ctx)
		denied := c.denied.Denied()
		for _, d := range denied {
			c.res.fail("the operator was forbidden to %s: the CSV lacks %s", d, d.Rule())
		}
		for _, line := range c.podDenied {
			c.res.fail("the operator's pod logged a refusal: %s", line)
		}
		if len(denied) > 0 || len(c.podDenied) > 0 {
			c.res.suggest("add the missing rules to the chart's RBAC (chartpilot generate re-derives config/rbac/role.yaml) and regenerate the bundle")
			return nil
		}
		if err != nil {
			// Nothing was refused, but the flow stopped early: what it did
			// not reach is unproven.
			c.res.error(fmt.Errorf("no request was refused, but the operator could not be exercised to the end: %w", err))
		}
		return nil
	})
}

// logForbiddenEvents adds to the log the Warning events in the test
// namespace that report a forbidden request: what the operator told the
// user about the refusals the recorder saw.
func (c *clusterRun) logForbiddenEvents(ctx context.Context) {
	events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		c.res.logf("listing events: %v", err)
		return
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, "forbidden") {
			c.res.logf("event %s on %s %s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
}
