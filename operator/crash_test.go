package operator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// The operator process a test starts from its own binary reads the
// kubeconfig's path and its chart from these.
const (
	helperEnv      = "CHARTPILOT_TEST_OPERATOR_PROCESS"
	helperChartEnv = "CHARTPILOT_TEST_OPERATOR_CHART"
)

// TestOperatorProcess is not a test: it is the operator process that
// TestCrashMidInstall and TestKillTrials start from this test binary and kill.
func TestOperatorProcess(t *testing.T) {
	clustertest.SkipIfShort(t)
	kubeconfigPath := os.Getenv(helperEnv)
	if kubeconfigPath == "" {
		t.Skip("runs only as TestCrashMidInstall's operator process")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Watches: []watches.Watch{appWatch(t, os.Getenv(helperChartEnv))},
		Config:  cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0", Log: logr.Discard(),
	}
	_ = Run(context.Background(), opts) // until killed
}

// An operator killed in the middle of an install leaves the release
// pending-install; the next operator unlocks it and converges.
func TestCrashMidInstall(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	proc := startOperatorProcess(t, "testdata/charts/hooked")

	e.createApp(ns, "crash", map[string]any{"greeting": "hi"}, nil)
	helm, err := release.NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	req := &release.Request{Name: "crash", Namespace: ns, Chart: appWatch(t, "testdata/charts/hooked").LoadedChart, Values: map[string]any{"greeting": "hi"}, SkipDrift: true}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		st, err := helm.Observe(ctx, req)
		return err == nil && st.Status == release.Locked, nil
	})
	if err != nil {
		t.Fatal("the operator process never started the install")
	}
	// The install waits for its hook: kill the operator in the middle of it.
	proc.kill()
	st, err := helm.Observe(context.Background(), req)
	if err != nil || st.Status != release.Locked {
		t.Fatalf("after the crash: %s, %v; want Locked", st.Status, err)
	}

	// No Job controller here: the new operator installs without the hook.
	patch := `{"metadata":{"annotations":{"` + reconciler.AnnotationInstallNoHooks + `":"true"}}}`
	if _, err := e.dyn.Resource(appGVR).Namespace(ns).Patch(context.Background(), "crash", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, func(_ *Options, w *watches.Watch) { *w = appWatch(t, "testdata/charts/hooked") })
	e.waitCondition(ns, "crash", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	e.waitGreeting(ns, "crash", "hi")
	// Events are recorded asynchronously: the condition can be written
	// before the last of them is.
	e.waitEvents(ns, "crash", "Unlocked", "Uninstalled", "Installed")
}

// operatorProcess is an operator running in a process of its own, to kill.
type operatorProcess struct {
	t   *testing.T
	cmd *exec.Cmd
}

// startOperatorProcess starts an operator for the App kind with the chart at
// chartPath, in a process of its own, killed at the end of the test at the latest.
func startOperatorProcess(t *testing.T, chartPath string) *operatorProcess {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOperatorProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path, helperChartEnv+"="+chartPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &operatorProcess{t: t, cmd: cmd}
	t.Cleanup(p.kill)
	return p
}

// kill sends SIGKILL, as the kernel's OOM killer or a node's loss would, and
// reaps the process. Killing it again does nothing.
func (p *operatorProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		p.t.Errorf("killing the operator: %v", err)
	}
	_ = p.cmd.Wait()
}
