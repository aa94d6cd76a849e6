package operator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// A secret in a CR's spec (and so in a chart's Secret) never shows in the
// operator's logs, at any verbosity, nor in client-go's (klog, up to -v=7),
// nor in events, status or metrics: not when the release installs, not when
// an upgrade fails and is rolled back, not when the values break the chart's
// schema. It is searched for as written, JSON- and Go-escaped (the marker
// holds characters both escape) and base64-encoded at any alignment; the
// search is first shown to find a control marker planted in each form.
func TestSecretsStayOut(t *testing.T) {
	const marker = `s3cr3t<MARKER>&"7f1c`
	checkSecretSearch(t, marker)
	var logs, klogs syncBuffer
	logger := funcr.New(func(prefix, args string) { logs.write(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10})
	captureKlog(t, &klogs, marker)
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

	klog.Flush()
	for what, text := range map[string]string{
		"logs": logs.String(), "client-go's logs": klogs.String(), "events": eventText.String(),
		"status": strings.Join(statuses, "\n"), "metrics": metricText.String(),
	} {
		if text == "" {
			t.Errorf("no %s to search: the test would prove nothing", what)
		}
		if form, i := findSecret(text, marker); i >= 0 {
			t.Errorf("the secret shows in the %s, %s: ...%s...", what, form, text[max(0, i-200):min(len(text), i+100)])
		}
	}
}

// klogVerbosity is the most verbose klog level searched: at 8 and above
// client-go dumps request and response bodies (as kubectl -v=8 does), the
// CR's spec among them.
const klogVerbosity = "7"

// captureKlog routes klog's output (client-go's logs) into buf at
// klogVerbosity until the test ends, and shows it arrives: a control
// marker logged through klog is found in buf in every form.
func captureKlog(t *testing.T, buf *syncBuffer, marker string) {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	set := func(name, value string) {
		if err := fs.Set(name, value); err != nil {
			t.Fatalf("klog flag %s: %v", name, err)
		}
	}
	set("v", klogVerbosity)
	set("logtostderr", "false")
	set("alsologtostderr", "false")
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		set("logtostderr", "true")
		set("v", "0")
	})
	control := controlMarker(marker)
	v, _ := strconv.Atoi(klogVerbosity)
	klog.V(klog.Level(v)).InfoS("control", "values", mustJSON(t, map[string]string{"password": control}))
	klog.Flush()
	if form, i := findSecret(buf.String(), control); i < 0 {
		t.Fatalf("a control marker logged through klog at V(%d) is not in the captured output: klog is not captured\n%s", v, buf.String())
	} else {
		t.Logf("control marker found in klog's output %s", form)
	}
}

// controlMarker is a marker of the same characters as marker but another,
// planted on purpose to show the search works.
func controlMarker(marker string) string {
	return strings.Replace(marker, "MARKER", "CONTROL", 1)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// secretForm is a way a secret may be written out.
type secretForm struct{ name, text string }

// secretForms lists how marker may show in text: as is, JSON-escaped
// (encoding/json escapes <, > and & too), Go-quoted (funcr, %q), both; and
// each of these base64-encoded (standard and URL alphabet) at each of the
// three alignments a longer value may put it at: the characters only the
// marker's bytes determine.
func secretForms(marker string) []secretForm {
	quoted, _ := json.Marshal(marker)
	inJSON := string(quoted[1 : len(quoted)-1])
	texts := []secretForm{
		{"as is", marker},
		{"JSON-escaped", inJSON},
		{"Go-quoted", goQuoted(marker)},
		{"JSON-escaped, then Go-quoted", goQuoted(inJSON)},
	}
	forms := slices.Clone(texts)
	for _, text := range texts {
		for _, enc := range []struct {
			name string
			enc  *base64.Encoding
		}{{"base64", base64.StdEncoding}, {"base64url", base64.URLEncoding}} {
			for k := range 3 {
				s := enc.enc.EncodeToString(append(make([]byte, k), text.text...))
				from, to := (8*k+5)/6, 8*(k+len(text.text))/6
				forms = append(forms, secretForm{fmt.Sprintf("%s, %s at offset %d", text.name, enc.name, k), s[from:to]})
			}
		}
	}
	return forms
}

// goQuoted is s as %q writes it, without the quotes.
func goQuoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// findSecret finds marker in text in any of its forms: the form's name and
// where, or -1.
func findSecret(text, marker string) (string, int) {
	for _, f := range secretForms(marker) {
		if i := strings.Index(text, f.text); i >= 0 {
			return f.name, i
		}
	}
	return "", -1
}

// checkSecretSearch shows that findSecret finds a control marker planted in
// text in each way a secret may be written out, and nothing in text
// without it: a broken search fails the test rather than passing it.
func checkSecretSearch(t *testing.T, marker string) {
	t.Helper()
	control := controlMarker(marker)
	value := control + "-value"
	var plants []secretForm
	quoted, _ := json.Marshal(map[string]string{"password": value})
	for k := range 3 {
		pad := strings.Repeat("p", k)
		plants = append(plants,
			secretForm{fmt.Sprintf("base64 at offset %d", k), base64.StdEncoding.EncodeToString([]byte(pad + value))},
			secretForm{fmt.Sprintf("base64url at offset %d", k), base64.URLEncoding.EncodeToString([]byte(pad + value))},
			secretForm{fmt.Sprintf("JSON, base64 at offset %d", k), base64.StdEncoding.EncodeToString(append([]byte(pad), quoted...))})
	}
	plants = append(plants,
		secretForm{"as is", "password=" + value},
		secretForm{"JSON-escaped", string(quoted)},
		secretForm{"Go-quoted", fmt.Sprintf("password=%q", value)},
		secretForm{"JSON-escaped, then Go-quoted", fmt.Sprintf("values=%q", quoted)})
	for _, p := range plants {
		text := "before " + p.text + " after"
		if _, i := findSecret(text, control); i < 0 {
			t.Fatalf("the search misses a marker written %s: %s", p.name, text)
		}
		if form, i := findSecret(text, marker); i >= 0 {
			t.Fatalf("the search finds the marker %s in text without it: %s", form, text)
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

// Write makes it an io.Writer (klog's output).
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.write(string(p))
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
