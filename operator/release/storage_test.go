package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/cluster/clustertest"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

func testRelease(name string, version int, manifest string) *helmrelease.Release {
	return &helmrelease.Release{
		Name: name, Version: version, Namespace: "ns", Manifest: manifest,
		Info:   &helmrelease.Info{Status: releasecommon.StatusDeployed},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "c", Version: "1.0.0"}},
		Labels: map[string]string{DigestLabel: "abc"},
	}
}

// Releases that fit in a Secret are stored as Helm stores them: Helm's own
// driver reads them, and ours reads Helm's.
func TestSecretsDriverIsHelmCompatible(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	secrets := f.cs.CoreV1().Secrets(f.ns)
	ours := newSecretsDriver(secrets, &encoder{}, t.Logf, nil)
	helms := driver.NewSecrets(secrets)

	if err := ours.create("sh.helm.release.v1.a.v1", testRelease("a", 1, "kind: A")); err != nil {
		t.Fatal(err)
	}
	got, err := v1(helms.Get("sh.helm.release.v1.a.v1"))
	if err != nil || got.Manifest != "kind: A" || got.Labels[DigestLabel] != "abc" {
		t.Fatalf("helm reads ours: %+v, %v", got, err)
	}
	if err := helms.Create("sh.helm.release.v1.b.v1", testRelease("b", 1, "kind: B")); err != nil {
		t.Fatal(err)
	}
	rs, err := ours.queryHelm(map[string]string{"name": "b", "owner": "helm"})
	if err != nil || len(rs) != 1 || rs[0].Manifest != "kind: B" {
		t.Fatalf("ours reads helm's: %v, %v", rs, err)
	}
	if err := ours.create("sh.helm.release.v1.a.v1", testRelease("a", 1, "x")); err != driver.ErrReleaseExists {
		t.Errorf("second Create = %v, want ErrReleaseExists", err)
	}
	if _, err := ours.get("missing"); err != driver.ErrReleaseNotFound {
		t.Errorf("Get of a missing release = %v", err)
	}
}

// A release larger than a Secret can hold is split, read back whole, and
// its parts follow it through updates and deletion.
func TestSecretsDriverSplitsLargeReleases(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	secrets := f.cs.CoreV1().Secrets(f.ns)
	d := newSecretsDriver(secrets, &encoder{}, t.Logf, nil)
	d.partSize = 4096 // small parts keep the test fast; the logic is the same
	key := "sh.helm.release.v1.big.v1"
	big := randomText(20000) // hex: about half compresses away, 4 parts of base64

	if err := d.create(key, testRelease("big", 1, big)); err != nil {
		t.Fatal(err)
	}
	parts := countParts(t, f, key)
	if parts < 3 {
		t.Fatalf("%d extra parts, want the release split", parts)
	}
	got, err := d.get(key)
	if err != nil || got.Manifest != big {
		t.Fatalf("read back: %v (manifest equal: %v)", err, got != nil && got.Manifest == big)
	}
	if _, ok := got.Labels[partsLabel]; ok {
		t.Error("the parts label leaked into the release's labels")
	}
	rs, err := d.queryHelm(map[string]string{"name": "big", "owner": "helm"})
	if err != nil || len(rs) != 1 || rs[0].Manifest != big {
		t.Fatalf("query: %d releases, %v", len(rs), err)
	}
	if got.Info.Description != "" {
		t.Errorf("the summary's note reached the whole release: %q", got.Info.Description)
	}

	// Helm's own driver (helm list, history, status) reads the summary.
	helms := driver.NewSecrets(secrets)
	sum, err := v1(helms.Get(key))
	if err != nil {
		t.Fatalf("Helm cannot read a release stored in parts: %v", err)
	}
	if sum.Name != "big" || sum.Version != 1 || sum.Info.Status != releasecommon.StatusDeployed || sum.Chart.Metadata.Name != "c" || sum.Labels[DigestLabel] != "abc" {
		t.Errorf("Helm reads %s v%d %s of chart %s, labels %v", sum.Name, sum.Version, sum.Info.Status, sum.Chart.Metadata.Name, sum.Labels)
	}
	if sum.Manifest != "" || !strings.Contains(sum.Info.Description, "stored by chartpilot in") {
		t.Errorf("Helm's view should say the manifest is elsewhere: manifest %d bytes, description %q", len(sum.Manifest), sum.Info.Description)
	}
	if hist, err := v1s(helms.Query(map[string]string{"name": "big", "owner": "helm"})); err != nil || len(hist) != 1 {
		t.Errorf("helm history: %d records, %v", len(hist), err)
	}

	// Shrinking removes the parts no longer used.
	if err := d.update(key, testRelease("big", 1, "small")); err != nil {
		t.Fatal(err)
	}
	if n := countParts(t, f, key); n != 0 {
		t.Errorf("%d parts left after the release shrank", n)
	}
	if err := d.update(key, testRelease("big", 1, big)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.delete(key); err != nil {
		t.Fatal(err)
	}
	if n := countParts(t, f, key); n != 0 {
		t.Errorf("%d parts left after Delete", n)
	}
}

// A release whose manifest exceeds 1 MiB installs, upgrades and uninstalls.
func TestReleaseOverOneMiB(t *testing.T) {
	clustertest.SkipIfShort(t)
	f := newFixture(t)
	templates := []*helmcommon.File{}
	for i := range 3 {
		templates = append(templates, &helmcommon.File{
			Name: fmt.Sprintf("templates/blob%d.yaml", i),
			Data: []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blob%d\ndata:\n  blob: %q\n", i, randomText(450_000))),
		})
	}
	big := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "big", Version: "0.1.0"}, Templates: templates}
	req := &Request{Name: "big", Namespace: f.ns, Chart: big, Values: map[string]any{}}
	f.mustReconcile(req, ActionInstall)
	if n := countParts(t, f, "sh.helm.release.v1.big.v1"); n < 1 {
		t.Errorf("release stored without parts (%d)", n)
	}
	req2 := &Request{Name: "big", Namespace: f.ns, Chart: big, Values: map[string]any{"x": 1}}
	f.mustReconcile(req2, ActionUpgrade)
	f.mustReconcile(req2)
	// helm history reads both revisions.
	if hist, err := driver.NewSecrets(f.cs.CoreV1().Secrets(f.ns)).Query(map[string]string{"name": "big", "owner": "helm"}); err != nil || len(hist) != 2 {
		t.Errorf("Helm's driver reads %d revisions, %v; want 2", len(hist), err)
	}
	if err := f.client.Uninstall(context.Background(), req2); err != nil {
		t.Fatal(err)
	}
	list, err := f.cs.CoreV1().Secrets(f.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, "sh.helm.release") {
			t.Errorf("secret %s left after uninstall", s.Name)
		}
	}
}

// Records written in the earlier format (the release Secret holding the first
// piece of the encoding) are still read whole.
func TestSecretsDriverReadsEarlierParts(t *testing.T) {
	f := newFixture(t)
	secrets := f.cs.CoreV1().Secrets(f.ns)
	key, manifest := "sh.helm.release.v1.old.v1", randomText(20000)
	data, err := (&encoder{}).encode(testRelease("old", 1, manifest))
	if err != nil {
		t.Fatal(err)
	}
	pieces := split(data, 4096)
	for i, p := range pieces {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: partName(key, i+1), Labels: map[string]string{partOfLabel: key}}, Data: map[string][]byte{"part": p}}
		if i == 0 {
			s.Name, s.Type = key, releaseType
			s.Labels = map[string]string{"owner": "helm", "name": "old", "version": "1", "status": "deployed", partsLabel: fmt.Sprint(len(pieces))}
			s.Data = map[string][]byte{"release": p}
		}
		if _, err := secrets.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := newSecretsDriver(secrets, &encoder{}, t.Logf, nil)
	got, err := d.get(key)
	if err != nil || got.Manifest != manifest {
		t.Fatalf("read back: %v (manifest equal: %v)", err, got != nil && got.Manifest == manifest)
	}
	if _, err := d.delete(key); err != nil {
		t.Fatal(err)
	}
	if n := countParts(t, f, key); n != 0 {
		t.Errorf("%d parts of the earlier format left after Delete", n)
	}
}

func countParts(t *testing.T, f *fixture, key string) int {
	t.Helper()
	list, err := f.cs.CoreV1().Secrets(f.ns).List(context.Background(), metav1.ListOptions{LabelSelector: partOfLabel + "=" + key})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func randomText(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// A listing that found no records answers Helm's next query of the
// release once, and only for a while.
func TestAbsentAnswersOnce(t *testing.T) {
	d := &secretsDriver{absent: map[string]time.Time{"fresh": time.Now(), "stale": time.Now().Add(-absentFor - time.Second)}}
	if !d.takeAbsent("fresh") {
		t.Error("a listing a moment ago did not answer")
	}
	if d.takeAbsent("fresh") {
		t.Error("the answer was given twice")
	}
	if d.takeAbsent("stale") {
		t.Errorf("a listing older than %s answered", absentFor)
	}
	if d.takeAbsent("never") {
		t.Error("a release never listed answered")
	}
}

// A reused gzip writer encodes each release whole and alone.
func TestEncoderReusesWriters(t *testing.T) {
	enc := &encoder{}
	for i, name := range []string{"first", "second", "third"} {
		data, err := enc.encode(testRelease(name, i+1, "kind: ConfigMap\nmetadata:\n  name: "+name+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		rls, err := decode(data, "test")
		if err != nil {
			t.Fatalf("decoding %s: %v", name, err)
		}
		if rls.Name != name || rls.Version != i+1 || !strings.Contains(rls.Manifest, name) {
			t.Errorf("decoded %s v%d %q, want %s v%d", rls.Name, rls.Version, rls.Manifest, name, i+1)
		}
	}
}
