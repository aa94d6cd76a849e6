package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	scorecardv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot"
	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/olm"
)

var helloGVR = schema.GroupVersionResource{Group: "charts.example.com", Version: "v1alpha1", Resource: "hellos"}

// The release's objects, by kind and resource, to check that none is lost.
var releaseObjects = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"ConfigMap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
	{"Service", schema.GroupVersionResource{Version: "v1", Resource: "services"}},
	{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
}

var pdbGVR = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}

func csvName(version string) string { return project + ".v" + version }

func (d *demo) chartpilot(ctx context.Context, args ...string) (string, error) {
	return d.r.run(ctx, d.projectDir, append([]string{d.opts.Binary}, args...)...)
}

// makeBundle runs make bundle for version with extra generate flags.
func (d *demo) makeBundle(ctx context.Context, version string, flags ...string) (capability string, err error) {
	opts := append([]string{"--channels=" + channel, "--default-channel=" + channel}, flags...)
	img := "example.com/" + project + ":v" + version
	if d.node != nil {
		img = d.img(version)
	}
	_, err = d.r.run(ctx, d.projectDir, "make", "bundle",
		"VERSION="+version, "IMG="+img, "CHARTPILOT="+d.opts.Binary,
		"BUNDLE_METADATA_OPTS="+strings.Join(opts, " "))
	if err != nil {
		return "", err
	}
	csv, err := readCSV(d.projectDir)
	if err != nil {
		return "", err
	}
	capability, _, _ = unstructured.NestedString(csv.Object, "metadata", "annotations", "capabilities")
	return capability, nil
}

func (d *demo) bundle(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		capability, err := d.makeBundle(ctx, version)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s, validated; capability level %q before any scorecard evidence", csvName(version), capability), nil
	}
}

// readCSV reads the ClusterServiceVersion of the bundle of the project in
// dir.
func readCSV(dir string) (*unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "bundle", "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(paths) != 1 {
		return nil, fmt.Errorf("the bundle has %d ClusterServiceVersions, want 1", len(paths))
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		return nil, err
	}
	csv := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &csv.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", paths[0], err)
	}
	return csv, nil
}

// scorecard runs the scorecard on the project's bundle (with the upgrade
// test from a previous release when given), then generates the bundle again
// with the results as evidence for its capability level.
func (d *demo) scorecard(version string, from ...string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		results := filepath.Join(d.opts.Dir, "scorecard-"+version+".json")
		args := append([]string{"scorecard", "bundle", "-o", "json", "--results", results, "--wait-time", "90s"}, from...)
		var left []string
		if len(from) == 0 {
			// The first release has nothing to upgrade from.
			left = append(left, scorecardtests.ChartpilotUpgrade+"-test")
		}
		if d.node == nil {
			// No pod runs on a kwok node and simulated pods run any image:
			// these tests would end in the error state (the real node's
			// journey runs them).
			left = append(left, scorecardtests.ChartpilotBackupRestore+"-test", scorecardtests.ChartpilotAutorollback+"-test")
		}
		if len(left) > 0 {
			args = append(args, "-l", "test notin ("+strings.Join(left, ",")+")")
		}
		// A file of an earlier run must not stand for this one's failures.
		if err := os.Remove(results); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, err := d.chartpilot(ctx, args...); err != nil {
			// The output's tail may hold none of the failures' reasons.
			if why := scorecardFailures(results); why != "" {
				err = fmt.Errorf("%w\n%s", err, why)
			}
			return "", err
		}
		passed, total, err := scorecardResults(results)
		if err != nil {
			return "", err
		}
		var flags []string
		if version != "0.1.0" {
			flags = append(flags, "--from-catalog", d.catalogDir)
		}
		capability, err := d.makeBundle(ctx, version, append(flags, "--scorecard-results", results)...)
		if err != nil {
			return "", err
		}
		if d.sum.Capabilities == nil {
			d.sum.Capabilities = map[string]string{}
		}
		d.sum.Capabilities[version] = capability
		return fmt.Sprintf("%d of %d tests passed; capability level %q proven", passed, total, capability), nil
	}
}

// scorecardResults counts the passed and all results of a v1alpha3 TestList.
func scorecardResults(path string) (passed, total int, err error) {
	list, err := readScorecardResults(path)
	if err != nil {
		return 0, 0, err
	}
	for _, item := range list.Items {
		for _, r := range item.Status.Results {
			total++
			if r.State == scorecardv1alpha3.PassState {
				passed++
			}
		}
	}
	return passed, total, nil
}

// scorecardFailures says, a line each, which tests of the results file did
// not pass and why; "" when it has none (or cannot be read).
func scorecardFailures(path string) string {
	list, err := readScorecardResults(path)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, item := range list.Items {
		for _, r := range item.Status.Results {
			if r.State != scorecardv1alpha3.PassState {
				fmt.Fprintf(&b, "    %s %s: %s\n", r.Name, r.State, strings.Join(r.Errors, "; "))
			}
		}
	}
	return b.String()
}

func readScorecardResults(path string) (scorecardv1alpha3.TestList, error) {
	var list scorecardv1alpha3.TestList
	data, err := os.ReadFile(path)
	if err != nil {
		return list, err
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return list, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}

func (d *demo) publish(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if _, err := os.Stat(d.catalogDir); os.IsNotExist(err) {
			if _, err := d.chartpilot(ctx, "catalog", "init", "--dir", d.catalogDir, "--from-bundle", "bundle"); err != nil {
				return "", err
			}
		}
		out, err := d.chartpilot(ctx, "catalog", "add", "--dir", d.catalogDir, "bundle")
		if err != nil {
			return "", err
		}
		if _, err := d.chartpilot(ctx, "catalog", "validate", "--dir", d.catalogDir); err != nil {
			return "", err
		}
		return strings.Join(strings.Fields(out), " "), nil
	}
}

func (d *demo) serveCatalog(ctx context.Context) (string, error) {
	if d.servePort == 0 {
		port, err := cluster.FreePort()
		if err != nil {
			return "", err
		}
		d.servePort = port
	}
	if d.serve != nil {
		d.serve.stop()
	}
	p, err := d.r.start("catalog-serve", d.opts.Dir, nil, d.opts.Binary, "catalog", "serve", d.catalogDir, "--port", strconv.Itoa(d.servePort))
	if err != nil {
		return "", err
	}
	d.serve = p
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(d.servePort))
	err = poll(ctx, d.opts.Timeout, "the catalog server on "+addr, func() (bool, string, error) {
		if err := p.exited(); err != nil {
			return false, "", err
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error(), nil
		}
		c.Close()
		return true, "", nil
	})
	return "serving on " + addr, err
}

func (d *demo) subscribe(ctx context.Context) (string, error) {
	ns := d.opts.Namespace
	catalog := []string{"--catalog-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.servePort))}
	if d.node != nil {
		catalog = []string{"--catalog-image", d.catalogImg("0.1.0")}
	}
	manifests, err := d.chartpilot(ctx, append(append([]string{"olm", "subscribe", pkg, "-n", ns}, catalog...),
		"--channel", channel, "--install-mode", "OwnNamespace", "--dry-run", "-o", "yaml")...)
	if err != nil {
		return "", err
	}
	// The CatalogSource and OperatorGroup are applied; the Subscription is
	// written to subscription.yaml and created with kubectl, as a user would.
	var setup, sub []string
	for _, doc := range strings.Split(manifests, "\n---\n") {
		if strings.Contains(doc, "kind: Subscription") {
			sub = append(sub, doc)
		} else if strings.TrimSpace(doc) != "" {
			setup = append(setup, doc)
		}
	}
	if len(sub) != 1 {
		return "", fmt.Errorf("chartpilot olm subscribe --dry-run printed %d Subscriptions, want 1", len(sub))
	}
	setupFile := filepath.Join(d.opts.Dir, "catalogsource.yaml")
	subFile := filepath.Join(d.opts.Dir, "subscription.yaml")
	if err := os.WriteFile(setupFile, []byte(strings.Join(setup, "\n---\n")), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(subFile, []byte(sub[0]), 0o644); err != nil {
		return "", err
	}
	if _, err := d.r.run(ctx, d.opts.Dir, "kubectl", "create", "namespace", ns); err != nil {
		return "", err
	}
	if _, err := d.r.run(ctx, d.opts.Dir, "kubectl", "apply", "-f", setupFile); err != nil {
		return "", err
	}
	began := time.Now()
	if _, err := d.r.run(ctx, d.opts.Dir, "kubectl", "create", "-f", subFile); err != nil {
		return "", err
	}
	if err := d.waitCSV(ctx, csvName("0.1.0")); err != nil {
		return "", err
	}
	d.sum.SubscriptionToSucceeded = time.Since(began).Round(10 * time.Millisecond)
	return fmt.Sprintf("CSV %s Succeeded %s after the Subscription", csvName("0.1.0"), d.sum.SubscriptionToSucceeded), nil
}

// waitCSV waits for the Subscription's CSV to be name and Succeeded,
// showing where OLM is (olm.Observe) when it times out.
func (d *demo) waitCSV(ctx context.Context, name string) error {
	return poll(ctx, d.opts.Timeout, "CSV "+name+" to succeed", func() (bool, string, error) {
		o, err := olm.Observe(ctx, d.olm, pkg, d.opts.Namespace)
		if err != nil {
			return false, "", err
		}
		return o.CSV != nil && o.CSV.Name == name && o.Installed(), o.Report().Summary(), nil
	})
}

// runOperator starts chartpilot run as the operator would run in its pod:
// with the identity of the ServiceAccount OLM created from the CSV and
// WATCH_NAMESPACE from the OperatorGroup's target namespaces.
func (d *demo) runOperator(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := d.olm.Get(ctx, client.ObjectKey{Namespace: d.opts.Namespace, Name: csvName(version)}, csv); err != nil {
			return "", err
		}
		deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
		if len(deps) == 0 {
			return "", fmt.Errorf("CSV %s has no deployment", csv.Name)
		}
		d.watchNS = csv.Annotations["olm.targetNamespaces"]
		return d.startOperator(ctx, version, d.projectDir, deps[0].Spec.Template.Spec.ServiceAccountName)
	}
}

// startOperator starts chartpilot run in the project in dir as the
// ServiceAccount sa of the namespace, watching d.watchNS, and waits for it
// to be ready; the operator it replaces stops first.
func (d *demo) startOperator(ctx context.Context, version, dir, sa string) (string, error) {
	if d.operator != nil {
		d.operator.stop()
	}
	metrics, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	probes, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	user := "system:serviceaccount:" + d.opts.Namespace + ":" + sa
	p, err := d.r.start("operator-v"+version, dir, []string{"WATCH_NAMESPACE=" + d.watchNS},
		d.opts.Binary, "run", "--kubeconfig", d.kubeconfig, "--as", user,
		"--watches-file", "watches.yaml",
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metrics),
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probes))
	if err != nil {
		return "", err
	}
	d.operator = p
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probes)
	err = poll(ctx, d.opts.Timeout, "the operator to be ready", func() (bool, string, error) {
		if err := p.exited(); err != nil {
			return false, "", err
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	watching := d.watchNS
	if watching == "" {
		watching = "all namespaces"
	}
	return fmt.Sprintf("as %s, watching %s", user, watching), err
}

func (d *demo) sample() (string, error) {
	dir := d.projectDir
	if d.previous != "" {
		dir = d.previous
	}
	paths, err := filepath.Glob(filepath.Join(dir, "config", "samples", "*_hello.yaml"))
	if err != nil || len(paths) != 1 {
		return "", fmt.Errorf("found %d Hello samples in config/samples, want 1", len(paths))
	}
	return paths[0], nil
}

func (d *demo) createCR(ctx context.Context) (string, error) {
	sample, err := d.sample()
	if err != nil {
		return "", err
	}
	if _, err := d.r.run(ctx, d.projectDir, "kubectl", "create", "-n", d.opts.Namespace, "-f", sample); err != nil {
		return "", err
	}
	rel, err := d.waitRelease(ctx, "hello-0.1.0")
	if err != nil {
		return "", err
	}
	d.uids = map[string]string{}
	for _, o := range releaseObjects {
		obj, err := d.dyn.Resource(o.gvr).Namespace(d.opts.Namespace).Get(ctx, crName+"-hello", metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("the release's %s: %w", o.kind, err)
		}
		d.uids[o.kind] = string(obj.GetUID())
	}
	return rel, nil
}

// waitRelease waits for the CR's release of chart to be Deployed and Ready.
func (d *demo) waitRelease(ctx context.Context, chart string) (string, error) {
	var detail string
	err := poll(ctx, d.opts.Timeout, "Hello "+crName+" to be Deployed and Ready with "+chart, func() (bool, string, error) {
		if d.operator != nil {
			if err := d.operator.exited(); err != nil {
				return false, "", err
			}
		}
		cr, err := d.dyn.Resource(helloGVR).Namespace(d.opts.Namespace).Get(ctx, crName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		deployed, reason, msg := condition(cr, "Deployed")
		ready, _, readyMsg := condition(cr, "Ready")
		gotChart, _, _ := unstructured.NestedString(cr.Object, "status", "deployedRelease", "chart")
		if deployed == "True" && ready == "True" && gotChart == chart {
			detail = fmt.Sprintf("%s: %s (%s), Ready", crName, msg, reason)
			revision, _, _ := unstructured.NestedInt64(cr.Object, "status", "deployedRelease", "version")
			revisions, _, _ := d.tally()
			*revisions = append(*revisions, revision)
			return true, "", nil
		}
		return false, fmt.Sprintf("Deployed=%s %s %s; Ready=%s %s; chart %q", deployed, reason, msg, ready, readyMsg, gotChart), nil
	})
	return detail, err
}

// release publishes v0.2.0: the chart changes, the project is regenerated,
// and the new bundle is scorecarded (with the upgrade from v0.1.0) and added
// to the catalog.
func (d *demo) release(ctx context.Context) (string, error) {
	scored, err := d.makeRelease(ctx, nil)
	if err != nil {
		return "", err
	}
	published, err := d.publish("0.2.0")(ctx)
	if err != nil {
		return "", err
	}
	d.published = time.Now()
	// The registry server serves the catalog it loaded at start: restart it,
	// as a new catalog image would be rolled out.
	if _, err := d.serveCatalog(ctx); err != nil {
		return "", err
	}
	return scored + "; " + published, nil
}

// makeRelease makes v0.2.0: the chart's change, the project regenerated,
// beforeBundle (when set: the operator image), the bundle, and the
// scorecard with the upgrade test from v0.1.0 and the bundle again with
// its evidence. It returns the scorecard's detail.
func (d *demo) makeRelease(ctx context.Context, beforeBundle func(context.Context) (string, error)) (string, error) {
	previous, err := d.changeChart(ctx)
	if err != nil {
		return "", err
	}
	if beforeBundle != nil {
		if _, err := beforeBundle(ctx); err != nil {
			return "", err
		}
	}
	if _, err := d.makeBundle(ctx, "0.2.0", "--from-catalog", d.catalogDir); err != nil {
		return "", err
	}
	return d.scorecard("0.2.0", "--from-bundle", filepath.Join(previous, "bundle"), "--from-project", previous)(ctx)
}

// changeChart keeps the v0.1.0 project as it was (for the scorecard's
// upgrade test), writes the chart's v0.2.0 changes and regenerates the
// project; it returns the copy's directory.
func (d *demo) changeChart(ctx context.Context) (previous string, err error) {
	previous = filepath.Join(d.opts.Dir, project+"-0.1.0")
	if err := os.RemoveAll(previous); err != nil {
		return "", err
	}
	if _, err := d.r.run(ctx, d.opts.Dir, "cp", "-r", d.projectDir, previous); err != nil {
		return "", err
	}
	d.previous = previous
	if err := chartpilot.WriteExampleUpgrade(filepath.Join(d.projectDir, "helm-charts", chartpilot.ExampleChart)); err != nil {
		return "", err
	}
	_, err = d.chartpilot(ctx, "generate")
	return previous, err
}

func (d *demo) waitCSVUpgrade(ctx context.Context) (string, error) {
	if err := d.waitCSV(ctx, csvName("0.2.0")); err != nil {
		return "", err
	}
	err := poll(ctx, d.opts.Timeout, "CSV "+csvName("0.1.0")+" to be replaced", func() (bool, string, error) {
		old := &v1alpha1.ClusterServiceVersion{}
		err := d.olm.Get(ctx, client.ObjectKey{Namespace: d.opts.Namespace, Name: csvName("0.1.0")}, old)
		if isNotFound(err) {
			return true, "", nil
		}
		return false, "CSV " + csvName("0.1.0") + " is " + string(old.Status.Phase), err
	})
	return fmt.Sprintf("%s Succeeded %s after the publish; %s replaced", csvName("0.2.0"), time.Since(d.published).Round(10*time.Millisecond), csvName("0.1.0")), err
}

func (d *demo) upgradeOperator(ctx context.Context) (string, error) {
	if _, err := d.runOperator("0.2.0")(ctx); err != nil {
		return "", err
	}
	return d.checkUpgrade(ctx)
}

// tally is where the journey now records the release's revisions, the
// objects an upgrade kept and the time to the upgrade: OLM v1's summary
// while the journey goes through OLM v1.
func (d *demo) tally() (revisions *[]int64, kept *[]string, upgraded *time.Duration) {
	if d.v1 != nil {
		return &d.v1.Revisions, &d.v1.Kept, &d.v1.PublishToUpgraded
	}
	return &d.sum.Revisions, &d.sum.Kept, &d.sum.PublishToUpgraded
}

// checkUpgrade waits for the release upgraded to the chart of v0.2.0 and
// checks that nothing was lost: the same objects, and the new one.
func (d *demo) checkUpgrade(ctx context.Context) (string, error) {
	rel, err := d.waitRelease(ctx, "hello-0.2.0")
	if err != nil {
		return "", err
	}
	_, kept, upgraded := d.tally()
	*upgraded = time.Since(d.published).Round(10 * time.Millisecond)
	for _, o := range releaseObjects {
		obj, err := d.dyn.Resource(o.gvr).Namespace(d.opts.Namespace).Get(ctx, crName+"-hello", metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("after the upgrade, the release's %s: %w", o.kind, err)
		}
		if string(obj.GetUID()) != d.uids[o.kind] {
			return "", fmt.Errorf("the upgrade replaced the %s instead of updating it", o.kind)
		}
		*kept = append(*kept, o.kind)
	}
	if _, err := d.dyn.Resource(pdbGVR).Namespace(d.opts.Namespace).Get(ctx, crName+"-hello", metav1.GetOptions{}); err != nil {
		return "", fmt.Errorf("the PodDisruptionBudget of v0.2.0: %w", err)
	}
	return rel + "; ConfigMap, Service, Deployment kept, PodDisruptionBudget added", nil
}

// bundleRolesGone checks that unsubscribe removed the ClusterRoles the
// bundle ships (the Hello editor and viewer roles), which OLM leaves.
func (d *demo) bundleRolesGone(ctx context.Context) error {
	roles, err := d.cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: "olm.owner"})
	if err != nil {
		return err
	}
	for _, r := range roles.Items {
		if strings.HasPrefix(r.Labels["olm.owner"], pkg+".v") {
			return fmt.Errorf("ClusterRole %s of the bundle (olm.owner=%s) is still there after unsubscribe", r.Name, r.Labels["olm.owner"])
		}
	}
	return nil
}

// deleteCR deletes the Hello while its operator runs (its finalizer
// uninstalls the release) and checks the release's objects are gone.
func (d *demo) deleteCR(ctx context.Context) error {
	ns := d.opts.Namespace
	if _, err := d.r.run(ctx, d.opts.Dir, "kubectl", "delete", "-n", ns, "hellos.charts.example.com", crName, "--wait", "--timeout", d.opts.Timeout.String()); err != nil {
		return err
	}
	for _, o := range releaseObjects {
		_, err := d.dyn.Resource(o.gvr).Namespace(ns).Get(ctx, crName+"-hello", metav1.GetOptions{})
		if !isNotFound(err) {
			return fmt.Errorf("the release's %s is still there after the Hello was deleted (%v)", o.kind, err)
		}
	}
	return nil
}

func (d *demo) cleanup(ctx context.Context) (string, error) {
	ns := d.opts.Namespace
	if err := d.deleteCR(ctx); err != nil {
		return "", err
	}
	if d.operator != nil {
		d.operator.stop()
		d.operator = nil
	}
	if _, err := d.chartpilot(ctx, "olm", "unsubscribe", pkg, "-n", ns, "--delete-crds", "--yes"); err != nil {
		return "", err
	}
	if err := d.bundleRolesGone(ctx); err != nil {
		return "", err
	}
	if d.node != nil {
		if err := d.nothingLeft(ctx); err != nil {
			return "", err
		}
	}
	if _, err := d.r.run(ctx, d.opts.Dir, "kubectl", "delete", "namespace", ns, "--wait", "--timeout", d.opts.Timeout.String()); err != nil {
		return "", err
	}
	if d.serve != nil {
		d.serve.stop()
	}
	return "release uninstalled, operator unsubscribed, CRD and namespace deleted", nil
}
