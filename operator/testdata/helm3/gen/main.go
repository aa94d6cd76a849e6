// Command gen writes the Helm 3 releases the runtime's upgrade-in-place test
// starts from: it runs an operator built on Helm 3 (chartpilot's runtime
// before Helm 4, or operator-sdk's helm-operator) against an API server of
// its own, installs and upgrades one App release with it, and writes the CR,
// the release records and the release's objects, as they are in the
// cluster, to one YAML file. Run from the operator directory:
//
//	go run ./testdata/helm3/gen -operator PATH -style chartpilot|helm-operator -namespace NS -out testdata/helm3/NAME.yaml
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// namespace is the release's (a flag).
var namespace string

var appGVR = schema.GroupVersionResource{Group: "charts.example.com", Version: "v1alpha1", Resource: "apps"}

func main() {
	operator := flag.String("operator", "", "the Helm 3 operator binary")
	style := flag.String("style", "chartpilot", "chartpilot or helm-operator: how to run it")
	out := flag.String("out", "", "the file to write")
	flag.StringVar(&namespace, "namespace", "legacy", "the release's namespace")
	flag.Parse()
	if err := run(*operator, *style, *out); err != nil {
		log.Fatal(err)
	}
}

func run(operator, style, out string) error {
	ctx := context.Background()
	assets, err := clustertest.EnvtestAssets(ctx)
	if err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{"testdata/crd.yaml"}}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	dir, err := os.MkdirTemp("", "helm3-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(cfg, kubeconfig); err != nil {
		return err
	}
	chart, _ := filepath.Abs("testdata/charts/app")
	watchesFile := filepath.Join(dir, "watches.yaml")
	w := fmt.Sprintf("- group: charts.example.com\n  version: v1alpha1\n  kind: App\n  chart: %s\n", chart)
	if err := os.WriteFile(watchesFile, []byte(w), 0o600); err != nil {
		return err
	}
	args := []string{"run", "--watches-file", watchesFile, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	if style == "chartpilot" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	cmd := exec.Command(operator, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	apps := dyn.Resource(appGVR).Namespace(namespace)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "charts.example.com/v1alpha1", "kind": "App",
		"metadata": map[string]any{"name": "web", "namespace": namespace},
		"spec":     map[string]any{"greeting": "one", "withDeployment": true},
	}}
	if _, err := apps.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitRevision(ctx, dyn, 1); err != nil {
		return err
	}
	if _, err := apps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"greeting":"two"}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := waitRevision(ctx, dyn, 2); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the status written after the upgrade
	return dump(ctx, dyn, out)
}

// waitRevision waits for revision rev of release web to be deployed.
func waitRevision(ctx context.Context, dyn dynamic.Interface, rev int) error {
	secrets := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(namespace)
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("owner=helm,name=web,status=deployed,version=%d", rev)})
		return err == nil && len(l.Items) == 1, nil
	})
}

// dump writes the CR, the release records and the release's objects.
func dump(ctx context.Context, dyn dynamic.Interface, out string) error {
	var buf bytes.Buffer
	add := func(u *unstructured.Unstructured) error {
		unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(u.Object, "metadata", "generation")
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(data)
		return nil
	}
	kinds := []schema.GroupVersionResource{
		appGVR,
		{Version: "v1", Resource: "secrets"},
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
	}
	for _, gvr := range kinds {
		l, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range l.Items {
			u := &l.Items[i]
			if gvr.Resource == "configmaps" && u.GetName() == "kube-root-ca.crt" {
				continue
			}
			if err := add(u); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.WriteToFile(*kc, path)
}
