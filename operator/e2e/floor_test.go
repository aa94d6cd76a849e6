package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/chartpilot/chartpilot/cluster"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// floor is what deploying the CRs costs at the least: for each CR, as it is
// created, the chart's objects and a release record created directly, and
// the Deployed condition written, by one client at the operators'
// concurrency, with no client-side rate limit: the operator spreads its
// requests over several clients, each with a limit of its own, so the
// floor's one client at the operator's limit (100 a second, bursts of 200)
// was bound by its limiter, not by the API server (48 s for 1000 CRs on a
// quiet machine, where the operator took 27 s). An operator's time to all
// Deployed over the floor's is what it spends beyond the requests the job
// needs: watches, reads, Helm's bookkeeping, waiting in queues.
type floor struct {
	chart       *chart.Chart
	dyn         dynamic.Interface
	clientset   kubernetes.Interface
	mapper      *restmapper.DeferredDiscoveryRESTMapper
	concurrency int
}

func newFloor(cfg *rest.Config, chartDir string, concurrency int) (*floor, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // no rate limiter
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &floor{chart: ch, dyn: dyn, clientset: cs, concurrency: concurrency,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}, nil
}

// measureFloor creates crs CRs in a new namespace and deploys each directly,
// and returns the time until all show Deployed, measured as for the operators.
func measureFloor(b *testing.B, c *cluster.Cluster, f *floor, crs int) time.Duration {
	ns := fmt.Sprintf("floor-%d-%d", crs, time.Now().Unix()%100000)
	kubectl(b, c, "create", "namespace", ns)
	defer drain(b, c, f.dyn, ns)

	queue := make(chan *unstructured.Unstructured, crs)
	var failed error
	var mu sync.Mutex
	var workers sync.WaitGroup
	for range f.concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for cr := range queue {
				if err := f.deploy(context.Background(), cr); err != nil {
					mu.Lock()
					failed = errors.Join(failed, fmt.Errorf("%s: %w", cr.GetName(), err))
					mu.Unlock()
				}
			}
		}()
	}
	clusterBefore, serverBefore := takeClusterCPU(b, c), takeServerRequests(b, c)
	b.ResetTimer()
	began := time.Now()
	createCRs(b, f.dyn, ns, crs, 0, func(u *unstructured.Unstructured) { queue <- u })
	close(queue)
	err := waitDeployed(f.dyn, ns, crs, func() error {
		mu.Lock()
		defer mu.Unlock()
		return failed
	})
	took := time.Since(began)
	b.StopTimer()
	workers.Wait()
	if err != nil {
		b.Fatalf("floor: not all CRs Deployed: %v", err)
	}
	clusterCPU, byComponent := takeClusterCPU(b, c).since(clusterBefore)
	b.Logf("floor, %d CRs: cluster CPU to deploy %.1f s (%s)", crs, clusterCPU, byComponent)
	b.Logf("floor, %d CRs: the API server's requests: %s", crs, takeServerRequests(b, c).since(serverBefore, crs))
	return took
}

// deploy renders the chart for cr, creates its objects and its release
// record, and marks cr Deployed.
func (f *floor) deploy(ctx context.Context, cr *unstructured.Unstructured) error {
	name, ns := cr.GetName(), cr.GetNamespace()
	spec, _, _ := unstructured.NestedMap(cr.Object, "spec")
	vals, err := valuesutil.ToRenderValues(f.chart, spec, helmcommon.ReleaseOptions{Name: name, Namespace: ns, Revision: 1, IsInstall: true}, helmcommon.DefaultCapabilities)
	if err != nil {
		return err
	}
	rendered, err := engine.Render(f.chart, vals)
	if err != nil {
		return err
	}
	files := make([]string, 0, len(rendered))
	for file := range rendered {
		files = append(files, file)
	}
	sort.Strings(files)
	var manifest strings.Builder
	owner := metav1.OwnerReference{APIVersion: cr.GetAPIVersion(), Kind: cr.GetKind(), Name: name, UID: cr.GetUID(), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
	for _, file := range files {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(rendered[file]), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			obj.SetNamespace(ns)
			obj.SetOwnerReferences([]metav1.OwnerReference{owner})
			m, err := f.mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
			if err != nil {
				return err
			}
			if _, err := f.dyn.Resource(m.Resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return err
			}
			manifest.WriteString("---\n# Source: " + file + "\n" + rendered[file] + "\n")
		}
	}
	now := time.Now()
	rel := &helmrelease.Release{
		Name: name, Namespace: ns, Version: 1, Chart: f.chart, Config: spec, Manifest: manifest.String(),
		Info: &helmrelease.Info{Status: releasecommon.StatusDeployed, FirstDeployed: now, LastDeployed: now, Description: "Install complete"},
	}
	records := driver.NewSecrets(f.clientset.CoreV1().Secrets(ns))
	if err := records.Create(fmt.Sprintf("sh.helm.release.v1.%s.v1", name), rel); err != nil {
		return fmt.Errorf("release record: %w", err)
	}
	status := fmt.Sprintf(`{"status":{"conditions":[{"type":"Deployed","status":"True","reason":"InstallSuccessful","message":"revision 1","lastTransitionTime":%q}]}}`,
		now.UTC().Format(time.RFC3339))
	_, err = f.dyn.Resource(benchGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
	return err
}

func ptr[T any](v T) *T { return &v }
