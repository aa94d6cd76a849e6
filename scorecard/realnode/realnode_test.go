package realnode

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/internal/testbin"
	"github.com/chartpilot/chartpilot/scaffold"
	"github.com/chartpilot/chartpilot/scorecard"
)

// node is the real-node cluster the package's tests share, each in
// namespaces of its own.
var node = &clustertest.SharedRealNode{Options: cluster.Options{WithoutOLM: true}}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	flag.Parse()
	// The tests side by side wait on pods and schedules, not on the CPU:
	// all of them at once, not GOMAXPROCS, unless -parallel says so.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "8"); err != nil {
			panic(err)
		}
	}
	node.Main(m)
}

// realCluster is the shared cluster with a real node.
func realCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	return node.Get(t)
}

// sideBySide installs the project's CRDs and lets the rest of t run beside
// the package's other such tests. Go resumes them only after the
// sequential tests, which check the whole cluster (no volume or snapshot
// content left). The CRDs come first, while t still runs alone, so that
// no scorecard run beside it creates them and deletes them when it ends.
func sideBySide(t *testing.T, projectDir string, cfg *rest.Config) {
	t.Helper()
	installCRDs(t, projectDir, cfg)
	t.Parallel()
}

// project scaffolds the vault chart's operator, builds its image into the
// cluster's registry (tagged for t, so that no other test's push replaces
// it) and writes its bundle, whose CSV runs that image.
func project(t *testing.T, c *cluster.Cluster) (bundleDir, image string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault-operator")
	if err := scaffold.Init(scaffold.Options{Dir: dir, APIOptions: scaffold.APIOptions{Chart: filepath.Join("testdata", "charts", "vault")}}); err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(dir, "config", "samples", "charts.example.com_v1alpha1_vault.yaml")
	operand := images.Repository(c.RegistryAddr(), images.HelloServer)
	replace(t, sample, "repository: hello-server", "repository: "+operand)
	began := time.Now()
	img, err := bundle.BuildOperatorImage(t.Context(), bundle.OperatorImageOptions{Dir: dir, Self: testbin.Chartpilot(t)})
	if err != nil {
		t.Fatal(err)
	}
	ref := c.RegistryAddr() + "/vault-operator:v0.1.0-" + nonTag.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if _, err := ociimage.Push(t.Context(), img, ref); err != nil {
		t.Fatal(err)
	}
	t.Logf("operator image %s built and pushed in %s", ref, time.Since(began).Round(100*time.Millisecond))
	if _, err := bundle.Generate(t.Context(), bundle.GenerateOptions{Dir: dir, Version: "0.1.0", Images: map[string]string{"controller": ref}}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "bundle"), ref
}

// nonTag matches what an image tag cannot hold.
var nonTag = regexp.MustCompile(`[^a-z0-9_.-]+`)

// The chartpilot-backup-restore test passes on a real node: the marker
// written into the sample's volume is found after a backup, the loss of
// the CR and its claim, and a restore.
func TestBackupRestoreOnRealNode(t *testing.T) {
	c := realCluster(t)
	bundleDir, image := project(t, c)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	sideBySide(t, filepath.Dir(bundleDir), cfg)
	sel := labels.SelectorFromSet(labels.Set{"test": scorecardtests.ChartpilotBackupRestore + "-test"})
	began := time.Now()
	list, err := scorecard.Run(t.Context(), scorecard.Options{BundleDir: bundleDir, Config: cfg, Selector: sel, WaitTime: 2 * time.Minute, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("ran %d tests, want %s", len(list.Items), scorecardtests.ChartpilotBackupRestore)
	}
	r := list.Items[0].Status.Results[0]
	t.Logf("%s: %s in %s\n%s", r.Name, r.State, time.Since(began).Round(time.Second), r.Log)
	if r.State != v1alpha3.PassState {
		t.Errorf("%s: %s\n%s", r.Name, r.State, strings.Join(r.Errors, "\n"))
	}
	t.Run("a volume through a claim, then S3 into another namespace", func(t *testing.T) {
		measure(t, c, filepath.Dir(bundleDir), image)
	})
}

func replace(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s does not hold %q:\n%s", path, old, data)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With the operator from its image, the install, upgrade, uninstall and
// rbac tests run against the operator's pod, started from the image pushed
// to the registry as the CSV's Deployment, not against an operator in this
// process. The upgrade is from the same bundle: its operator's pod is
// replaced by the next one's, of the same Deployment.
func TestOperatorFromImageOnRealNode(t *testing.T) {
	c := realCluster(t)
	bundleDir, image := project(t, c)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	sideBySide(t, filepath.Dir(bundleDir), cfg)
	want := []string{scorecardtests.ChartpilotInstall + "-test", scorecardtests.ChartpilotUpgrade + "-test", scorecardtests.ChartpilotUninstall + "-test", scorecardtests.ChartpilotRBAC + "-test"}
	sel, err := labels.Parse("test in (" + strings.Join(want, ",") + ")")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	list, err := scorecard.Run(t.Context(), scorecard.Options{BundleDir: bundleDir, Config: cfg, Selector: sel, WaitTime: 2 * time.Minute,
		FromBundleDir: bundleDir, Log: logr.Discard(), OperatorFromImage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tests in %s", len(list.Items), time.Since(began).Round(time.Second))
	if len(list.Items) != len(want) {
		t.Fatalf("ran %d tests, want %v", len(list.Items), want)
	}
	for _, item := range list.Items {
		r := item.Status.Results[0]
		if r.State != v1alpha3.PassState {
			t.Errorf("%s: %s\n%s\n%s", r.Name, r.State, strings.Join(r.Errors, "\n"), r.Log)
			continue
		}
		if !strings.Contains(r.Log, "operator started from image "+image) {
			t.Errorf("%s did not run the operator from %s:\n%s", r.Name, image, r.Log)
		}
	}
}
