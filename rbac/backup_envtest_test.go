package rbac

import (
	"context"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/rbac/rbactest"
)

// The backup API's extra power on a real API server, acting as the
// operator's ServiceAccount bound to the derived roles: pods/exec only
// where the chart's pods carry hooks (and only in the watched namespace),
// deleting VolumeSnapshotContents only where the chart makes claims. Each
// request names an object that does not exist: NotFound means the API
// server let the request through, Forbidden that RBAC refused it.
func TestBackupExtrasOnAPIServer(t *testing.T) {
	s := rbactest.Start(t)
	crds, err := clustertest.SnapshotCRDs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(s.Admin, envtest.CRDInstallOptions{Paths: []string{crds}}); err != nil {
		t.Fatal(err)
	}
	// webapp makes Deployments without hooks and no claim.
	webapp, err := chart.Load(chartDir("webapp"))
	if err != nil {
		t.Fatal(err)
	}
	hooked := writtenChart(t, map[string]string{"values.yaml": podAnnotations,
		"templates/deploy.yaml": deployment("        pre.hook.backup.velero.io/command: /freeze\n")})
	claims := writtenChart(t, map[string]string{"templates/sts.yaml": statefulSet})
	tests := []struct {
		name  string
		chart *chart.Chart
		// exec: pods/exec allowed in the watched namespace; deleteContent,
		// listContent: those verbs on VolumeSnapshotContents.
		exec, deleteContent, listContent bool
	}{
		{name: "no-hooks", chart: webapp},
		{name: "hooks", chart: hooked, exec: true},
		{name: "claims", chart: claims, deleteContent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := "backup-" + tt.name
			res, err := Derive(Options{Chart: tt.chart, Owner: Owner{Group: "charts.example.com", Resource: "things", Kind: "Thing"},
				Backup: true, WatchNamespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			op := s.Bind(t, ns, res.ClusterRole, res.Role, nil)
			checks := []struct {
				what    string
				allowed bool
				do      func() error
			}{
				{"pods/exec in " + ns, tt.exec, func() error { return execIn(t.Context(), op.Config, ns) }},
				{"pods/exec over a WebSocket in " + ns, tt.exec, func() error { return webSocketExecIn(t.Context(), op.Config, ns) }},
				{"pods/exec in default", false, func() error { return execIn(t.Context(), op.Config, "default") }},
				{"delete a VolumeSnapshotContent", tt.deleteContent, func() error {
					return contents(op.Config).Delete(t.Context(), "no-such-content", metav1.DeleteOptions{})
				}},
				{"list VolumeSnapshotContents", tt.listContent, func() error { _, err := contents(op.Config).List(t.Context(), metav1.ListOptions{}); return err }},
			}
			for _, c := range checks {
				err := c.do()
				switch {
				case c.allowed && !letThrough(err):
					t.Errorf("%s as %s: %v, want NotFound (allowed)", c.what, op.User, err)
				case !c.allowed && !refused(err):
					t.Errorf("%s as %s: %v, want Forbidden", c.what, op.User, err)
				}
			}
		})
	}
}

// execIn asks to run a command in a pod of ns that does not exist.
func execIn(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("no-such-pod").SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(ctx).Error()
}

func contents(cfg *rest.Config) dynamic.NamespaceableResourceInterface {
	return dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"})
}

// webSocketExecIn runs a command in a pod of ns that does not exist as
// client-go (and the operator's hooks) do: over a WebSocket, a GET.
func webSocketExecIn(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("no-such-pod").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
}

// letThrough and refused tell what the API server did with a request for
// an object that does not exist; a WebSocket's error is text only.
func letThrough(err error) bool {
	return apierrors.IsNotFound(err) || err != nil && strings.Contains(err.Error(), "not found")
}

func refused(err error) bool {
	return apierrors.IsForbidden(err) || err != nil && strings.Contains(err.Error(), "is forbidden")
}
