package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// A secret in a CR's spec (and so in a chart's Secret) never shows in the
// operator's logs, at any verbosity, nor in events, status or metrics: not
// when the release installs, not when an upgrade fails and is rolled back,
// not when the values break the chart's schema.
func TestSecretsStayOut(t *testing.T) {
	const marker = "s3cr3t-MARKER-7f1c"
	var logs syncBuffer
	logger := funcr.New(func(prefix, args string) { logs.write(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10})
	startOperator(t, func(o *Options, w *watches.Watch) {
		*w = appWatch(t, "testdata/charts/secretive")
		o.Log = logger
	})
	e := newEnv(t)
	ns := e.namespace()
	res := e.dyn.Resource(appGVR).Namespace(ns)
	var statuses []string
	keepStatus := func(typ string, status metav1.ConditionStatus, reason string) {
		u := e.waitCondition(ns, "vault", typ, status, reason)
		data, _ := json.Marshal(u.Object["status"])
		statuses = append(statuses, string(data))
	}
	patch := func(spec string) {
		t.Helper()
		if _, err := res.Patch(context.Background(), "vault", types.MergePatchType, []byte(`{"spec":`+spec+`}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	e.createApp(ns, "vault", map[string]any{"password": marker + "-1"}, nil)
	keepStatus(reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonInstallSuccessful)
	patch(fmt.Sprintf(`{"password":%q,"broken":true}`, marker+"-2"))
	keepStatus(reconciler.TypeReleaseFailed, metav1.ConditionTrue, reconciler.ReasonUpgradeError)
	patch(fmt.Sprintf(`{"password":%q,"broken":false}`, marker+strings.Repeat("x", 64)))
	keepStatus(reconciler.TypeIrreconcilable, metav1.ConditionTrue, reconciler.ReasonInvalidValues)

	events, err := e.cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var eventText strings.Builder
	for _, ev := range events.Items {
		fmt.Fprintf(&eventText, "%s %s\n", ev.Reason, ev.Message)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var metricText bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&metricText, f); err != nil {
			t.Fatal(err)
		}
	}

	for what, text := range map[string]string{
		"logs": logs.String(), "events": eventText.String(), "status": strings.Join(statuses, "\n"), "metrics": metricText.String(),
	} {
		if text == "" {
			t.Errorf("no %s to search: the test would prove nothing", what)
		}
		if i := strings.Index(text, marker); i >= 0 {
			t.Errorf("the secret shows in the %s: ...%s...", what, text[max(0, i-200):min(len(text), i+100)])
		}
	}
}

// syncBuffer collects log lines from the operator's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) write(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
