package helmcompat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/release"

	v3driver "helm.sh/helm/v3/pkg/storage/driver"
	v4common "helm.sh/helm/v4/pkg/chart/common"
	v4loader "helm.sh/helm/v4/pkg/chart/v2/loader"
	v4release "helm.sh/helm/v4/pkg/release/v1"
	v4driver "helm.sh/helm/v4/pkg/storage/driver"
)

// record is what a release record says, as both Helm libraries read it.
type record struct {
	Name, Namespace, Status, Description, Manifest, Chart string
	Version                                               int
	Config                                                string
	Labels                                                map[string]string
}

// readBoth reads the record key with Helm 3's and Helm 4's Secrets drivers.
func readBoth(t *testing.T, cs kubernetes.Interface, ns, key string) (v3, v4 record) {
	t.Helper()
	r3, err := v3driver.NewSecrets(cs.CoreV1().Secrets(ns)).Get(key)
	if err != nil {
		t.Fatalf("Helm 3 reads %s/%s: %v", ns, key, err)
	}
	cfg3, _ := json.Marshal(r3.Config)
	v3 = record{Name: r3.Name, Namespace: r3.Namespace, Status: r3.Info.Status.String(), Description: r3.Info.Description,
		Manifest: r3.Manifest, Chart: r3.Chart.Metadata.Name + "-" + r3.Chart.Metadata.Version, Version: r3.Version, Config: string(cfg3), Labels: r3.Labels}
	got, err := v4driver.NewSecrets(cs.CoreV1().Secrets(ns)).Get(key)
	if err != nil {
		t.Fatalf("Helm 4 reads %s/%s: %v", ns, key, err)
	}
	r4, ok := got.(*v4release.Release)
	if !ok {
		t.Fatalf("Helm 4 reads %s/%s as a %T", ns, key, got)
	}
	cfg4, _ := json.Marshal(r4.Config)
	v4 = record{Name: r4.Name, Namespace: r4.Namespace, Status: r4.Info.Status.String(), Description: r4.Info.Description,
		Manifest: r4.Manifest, Chart: r4.Chart.Metadata.Name + "-" + r4.Chart.Metadata.Version, Version: r4.Version, Config: string(cfg4), Labels: r4.Labels}
	return v3, v4
}

// sameRecord fails t when the two libraries read key differently.
func sameRecord(t *testing.T, cs kubernetes.Interface, ns, key string) record {
	t.Helper()
	v3, v4 := readBoth(t, cs, ns, key)
	a, _ := json.Marshal(v3)
	b, _ := json.Marshal(v4)
	if !bytes.Equal(a, b) {
		t.Errorf("%s/%s: Helm 3 reads %s\nHelm 4 reads %s", ns, key, a, b)
	}
	return v4
}

// The records an operator built on Helm 3 wrote (the runtime's upgrade
// fixtures) and those chartpilot's Helm 4 runtime writes, small and split
// into parts, read the same through Helm 3's and Helm 4's libraries.
func TestRecordsReadByBoth(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	mkns := func(name string) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("written by Helm 3", func(t *testing.T) {
		files, err := filepath.Glob("../../operator/testdata/helm3/*.yaml")
		if err != nil || len(files) == 0 {
			t.Fatalf("no Helm 3 fixtures: %v", err)
		}
		for _, f := range files {
			secrets := fixtureRecords(t, f)
			if len(secrets) < 2 {
				t.Fatalf("%s: %d records, want the history of an upgraded release", f, len(secrets))
			}
			mkns(secrets[0].Namespace)
			for _, s := range secrets {
				if _, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if r := sameRecord(t, cs, s.Namespace, s.Name); r.Manifest == "" {
					t.Errorf("%s: record %s read without its manifest", f, s.Name)
				}
			}
		}
	})

	t.Run("written by the Helm 4 runtime", func(t *testing.T) {
		const ns = "runtime"
		mkns(ns)
		helm, err := release.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := v4loader.Load("../../operator/testdata/charts/app")
		if err != nil {
			t.Fatal(err)
		}
		for _, greeting := range []string{"one", "two"} {
			if _, err := helm.Reconcile(ctx, &release.Request{Name: "web", Namespace: ns, Chart: ch, Values: map[string]any{"greeting": greeting}}); err != nil {
				t.Fatal(err)
			}
		}
		for v, status := range map[string]string{"1": "superseded", "2": "deployed"} {
			r := sameRecord(t, cs, ns, "sh.helm.release.v1.web.v"+v)
			if r.Status != status || !strings.Contains(r.Manifest, "kind: ConfigMap") {
				t.Errorf("revision %s: %s, manifest %q", v, r.Status, r.Manifest)
			}
		}
		history, err := v3driver.NewSecrets(cs.CoreV1().Secrets(ns)).Query(map[string]string{"owner": "helm", "name": "web"})
		if err != nil || len(history) != 2 {
			t.Errorf("helm history (Helm 3): %d records, %v", len(history), err)
		}

		// A release too large for one Secret: its parts are chartpilot's,
		// its record a summary both libraries read.
		big := *ch
		blob := make([]byte, 800<<10)
		if _, err := rand.Read(blob); err != nil {
			t.Fatal(err)
		}
		big.Files = append(append([]*v4common.File{}, ch.Files...), &v4common.File{Name: "blob.txt", Data: []byte(hex.EncodeToString(blob))})
		if _, err := helm.Reconcile(ctx, &release.Request{Name: "big", Namespace: ns, Chart: &big, Values: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		parts, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		split := 0
		for _, s := range parts.Items {
			if strings.HasPrefix(s.Name, "sh.helm.release.v1.big.v1.part-") {
				split++
			}
		}
		if split == 0 {
			t.Fatal("the large release was not split: the test does not exercise the split format")
		}
		sum := sameRecord(t, cs, ns, "sh.helm.release.v1.big.v1")
		if sum.Status != "deployed" || sum.Manifest != "" {
			t.Errorf("the summary of the split release: %s, manifest of %d bytes", sum.Status, len(sum.Manifest))
		}
		whole, err := helm.Latest(ctx, ns, "big")
		if err != nil || !strings.Contains(whole.Manifest, "kind: ConfigMap") || len(whole.Chart.Files) == 0 {
			t.Errorf("the runtime reads the split release whole: %v", err)
		}
	})
}

// fixtureRecords reads the release Secrets of a Helm 3 fixture.
func fixtureRecords(t *testing.T, file string) []*corev1.Secret {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Secret
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u map[string]any
		if err := dec.Decode(&u); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if u["kind"] != "Secret" || u["type"] != "helm.sh/release.v1" {
			continue
		}
		var s corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		s.ResourceVersion, s.UID, s.CreationTimestamp, s.ManagedFields = "", "", metav1.Time{}, nil
		out = append(out, &s)
	}
	return out
}
