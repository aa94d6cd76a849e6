package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/apply/kustomize"
	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/testbin"
	"github.com/chartpilot/chartpilot/scaffold"
)

// The example project's names once config/default's kustomization has
// prefixed and placed them (namePrefix hello-operator-).
const (
	operatorNamespace = "hello-operator-system"
	operatorDeploy    = "hello-operator-controller-manager"
	metricsService    = "hello-operator-controller-manager-metrics-service"
	metricsReader     = "hello-operator-metrics-reader"
)

// Metrics that only Prometheus may read, where the operator really runs:
// the example project's operator image, deployed with `make deploy`'s
// manifests (config/default: --metrics-secure on :8443, the RBAC of the
// authentication and authorization filter, the metrics Service) on the
// real node, and scraped through that Service by pods: one without a token
// is refused (401), one whose ServiceAccount is not bound to the project's
// metrics-reader ClusterRole is forbidden (403), one bound to it reads the
// operator's metrics (200).
func TestMetricsAuthOnRealNode(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Built before the real node is taken (this is the package's first
	// test): make test runs the realnode packages two at a time, so this
	// overlaps another one's turn.
	dir := filepath.Join(t.TempDir(), "hello-operator")
	if err := scaffold.Init(scaffold.Options{Dir: dir, APIOptions: scaffold.APIOptions{Chart: filepath.Join("..", "..", "helm-charts", "hello")}}); err != nil {
		t.Fatal(err)
	}
	img, err := bundle.BuildOperatorImage(ctx, bundle.OperatorImageOptions{Dir: dir, Self: testbin.Chartpilot(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := node.Get(t)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	// make docker-build docker-push deploy, as the library does them.
	ref := c.RegistryAddr() + "/hello-operator:v0.1.0"
	if _, err := ociimage.Push(ctx, img, ref); err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Build(filepath.Join(dir, "config", "default"), []kustomize.Image{{Name: "controller", Ref: ref}})
	if err != nil {
		t.Fatal(err)
	}
	// make undeploy after the test: the cluster is shared.
	t.Cleanup(func() {
		if err := apply.Delete(context.Background(), objs, apply.Options{Config: cfg, Wait: true}); err != nil {
			t.Errorf("make undeploy: %v", err)
		}
	})
	if err := apply.Apply(ctx, objs, apply.Options{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	waitAvailable(t, ctx, cs, operatorNamespace, operatorDeploy)
	t.Logf("the operator's Deployment available %s after make deploy", time.Since(began).Round(100*time.Millisecond))

	// The scrapers: a ServiceAccount bound to metrics-reader (Prometheus's
	// role), one that is not, and a pod with no token at all.
	for _, sa := range []string{"reader", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts(operatorNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: operatorNamespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	image := scrapeImage(t, ctx, c.RegistryAddr())
	url := fmt.Sprintf("https://%s.%s.svc:8443/metrics", metricsService, operatorNamespace)
	for _, tc := range []struct {
		name, serviceAccount string
		want                 []string
	}{
		{"no token", "", []string{"status 401"}},
		{"a token without metrics-reader", "stranger", []string{"status 403"}},
		{"a token bound to metrics-reader", "reader", []string{"status 200", "operator metrics true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scrape(t, ctx, cs, image, url, tc.serviceAccount)
			t.Logf("%s", strings.ReplaceAll(strings.TrimSpace(got), "\n", "; "))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the scrape said %q, want %q", strings.TrimSpace(got), w)
				}
			}
		})
	}
}

// scrape runs a pod of image that GETs url with the token of
// serviceAccount (none for ""), and returns what it printed.
func scrape(t *testing.T, ctx context.Context, cs kubernetes.Interface, image, url, serviceAccount string) string {
	t.Helper()
	const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	args := []string{url}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "scrape-", Namespace: operatorNamespace},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:  "scrape",
				Image: image,
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if serviceAccount != "" {
		pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken = serviceAccount, ptr.To(true)
		args = append(args, tokenPath)
	}
	pod.Spec.Containers[0].Args = args
	created, err := cs.CoreV1().Pods(operatorNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(operatorNamespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, lerr := cs.CoreV1().Pods(operatorNamespace).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("the scrape pod %s: %s (%v); logs: %s %v", created.Name, phase, err, logs, lerr)
	}
	return string(logs)
}

// waitAvailable waits until the Deployment's replicas are all available.
func waitAvailable(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	var last *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = d
		want := ptr.Deref(d.Spec.Replicas, 1)
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == want && d.Status.UpdatedReplicas == want, nil
	})
	if err != nil {
		var pods []string
		if list, lerr := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); lerr == nil {
			for _, p := range list.Items {
				pods = append(pods, fmt.Sprintf("%s %s %+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses))
			}
		}
		t.Fatalf("deployment %s/%s not available: %+v\npods: %s", ns, name, last.Status, strings.Join(pods, "\n"))
	}
}

// scrapeImage builds testdata/scrape into an image on the empty base, run
// as the images' non-root user, and pushes it to the local registry.
func scrapeImage(t *testing.T, ctx context.Context, registry string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scrape")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/scrape")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the scraper: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := ociimage.Tar([]ociimage.Entry{{Name: "scrape", Data: data, Mode: 0o755}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Scratch([][]byte{layer}, ociimage.Config{
		Platform:   v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Entrypoint: []string{"/scrape"},
		User:       "65532:65532",
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := images.Repository(registry, "scrape")
	digest, err := ociimage.Push(ctx, img, repo+":test")
	if err != nil {
		t.Fatal(err)
	}
	return repo + "@" + digest.String()
}
