package operator

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// An operator killed in the middle of an install leaves the release
// pending-install; the next operator unlocks it and converges.
func TestCrashMidInstall(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	proc := startOperatorProcess(t, processOptions{Chart: "testdata/charts/hooked"})

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
