package demo

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
)

// The journey goes through both OLMs on the cluster it starts, through
// OLM v0 alone on a cluster it is given unless asked (that cluster may run
// no OLM v1).
func TestResolveOLM(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    cluster.OLMVersions
		wantErr string
	}{
		{name: "default on a real node", opts: Options{Node: cluster.NodeReal}, want: cluster.OLMBoth},
		{name: "default on a kwok node", opts: Options{Node: cluster.NodeKwok}, want: cluster.OLMBoth},
		{name: "default on a given cluster", opts: Options{Kubeconfig: "kc"}, want: cluster.OLMv0},
		{name: "v1 on a kwok node", opts: Options{Node: cluster.NodeKwok, OLM: cluster.OLMv1}, want: cluster.OLMv1},
		{name: "both on a given cluster", opts: Options{Kubeconfig: "kc", OLM: cluster.OLMBoth}, want: cluster.OLMBoth},
		{name: "v0", opts: Options{OLM: cluster.OLMv0}, want: cluster.OLMv0},
		{name: "unknown", opts: Options{OLM: "v2"}, wantErr: `unknown OLM "v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &demo{opts: tt.opts}
			err := d.resolveOLM()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || d.opts.OLM != tt.want {
				t.Errorf("OLM %q, %v; want %s", d.opts.OLM, err, tt.want)
			}
		})
	}
}

// OLM v1's journey alone builds what OLM v0's journey would, with the same
// steps, makes v0.2.0 before OLM v1 installs v0.1.0 (whose operator of all
// namespaces would reconcile the scorecard's resources too), and publishes
// it between the custom resource's creation and the upgrade.
func TestV1Steps(t *testing.T) {
	d := &demo{}
	t.Run("real node", func(t *testing.T) { checkV1Steps(t, d.v1BuildSteps(), d.buildSteps(), d.v1Steps()) })
	t.Run("kwok node", func(t *testing.T) { checkV1Steps(t, d.kwokV1AloneSteps(), d.kwokBuildSteps(), d.kwokV1Journey()) })
}

func checkV1Steps(t *testing.T, aloneSteps, buildSteps, v1Steps []step) {
	t.Helper()
	var alone []string
	for _, s := range aloneSteps {
		alone = append(alone, s.title)
	}
	all := strings.Join(alone, "\n")
	for i, s := range buildSteps {
		if i >= len(alone) || alone[i] != s.title {
			t.Fatalf("step %d is not %q:\n%s", i+1, s.title, all)
		}
	}
	// Each of OLM v1's steps, in order.
	at := len(buildSteps)
	for _, s := range v1Steps {
		i := slices.Index(alone[at:], s.title)
		if i < 0 {
			t.Fatalf("OLM v1's step %q missing or out of order:\n%s", s.title, all)
		}
		at += i + 1
	}
	index := func(sub string) int {
		return slices.IndexFunc(alone, func(s string) bool { return strings.Contains(s, sub) })
	}
	make2, install, created, publish, upgrade := index(makeV2Title), index("olm v1 install"), index("create a Hello"), index(publishV2Title), index("olm v1 upgrade")
	if !(make2 >= 0 && make2 < install && install < created && created < publish && publish < upgrade) {
		t.Errorf("want v0.2.0 made, install, a Hello created, v0.2.0 published, the upgrade, in that order:\n%s", all)
	}
}

// The summary reports OLM v1's times as it reports OLM v0's, each only
// when measured.
func TestSummaryTimes(t *testing.T) {
	tests := []struct {
		name      string
		sum       Summary
		want, not []string
	}{
		{
			name: "both",
			sum: Summary{SubscriptionToSucceeded: 39 * time.Second, PublishToUpgraded: 47 * time.Second,
				OLMv1: &OLMv1Summary{ExtensionToInstalled: 1900 * time.Millisecond, PublishToUpgraded: 16500 * time.Millisecond, Duration: 42 * time.Second}},
			want: []string{"Subscription to CSV Succeeded:        39s", "Publish of v0.2.0 to release upgraded: 47s",
				"OLM v1: ClusterExtension created to Installed:  1.9s", "OLM v1: publish of v0.2.0 to release upgraded: 16.5s", "OLM v1's steps took 42s"},
		},
		{
			name: "OLM v0 alone",
			sum:  Summary{SubscriptionToSucceeded: 6 * time.Second},
			want: []string{"Subscription to CSV Succeeded:        6s"},
			not:  []string{"OLM v1"},
		},
		{
			name: "OLM v1 failed before the install",
			sum:  Summary{OLMv1: &OLMv1Summary{Duration: time.Second}},
			want: []string{"OLM v1's steps took 1s"},
			not:  []string{"Subscription", "created to Installed", "release upgraded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			sum := tt.sum
			d := &demo{opts: Options{Out: &out}, sum: &sum, r: &runner{logDir: "logs"}}
			d.printSummary(nil)
			for _, s := range tt.want {
				if !strings.Contains(out.String(), s) {
					t.Errorf("summary lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out.String(), s) {
					t.Errorf("summary says %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestOLMv1SummaryMissing(t *testing.T) {
	whole := func() *OLMv1Summary {
		return &OLMv1Summary{ExtensionToInstalled: time.Second, PublishToUpgraded: time.Second, Duration: time.Minute,
			Revisions: []int64{1, 2}, Kept: []string{"ConfigMap", "Service", "Deployment"},
			Gone: []string{"ClusterExtension hello-operator", "ClusterCatalog hello-operator", "the Hello CRD hellos.charts.example.com",
				"the installer's ClusterRole and ClusterRoleBinding", "namespace hello-demo"}}
	}
	tests := []struct {
		name  string
		edit  func(*OLMv1Summary) *OLMv1Summary
		wants []string
	}{
		{"whole", func(s *OLMv1Summary) *OLMv1Summary { return s }, nil},
		{"no OLM v1", func(*OLMv1Summary) *OLMv1Summary { return nil }, []string{"did not go through OLM v1"}},
		{"no timing", func(s *OLMv1Summary) *OLMv1Summary { s.PublishToUpgraded = 0; return s }, []string{"timings"}},
		{"one revision", func(s *OLMv1Summary) *OLMv1Summary { s.Revisions = []int64{1}; return s }, []string{"revisions [1]"}},
		{"a Service made again", func(s *OLMv1Summary) *OLMv1Summary { s.Kept = s.Kept[:1]; return s }, []string{"kept"}},
		{"namespace unchecked", func(s *OLMv1Summary) *OLMv1Summary { s.Gone = s.Gone[:4]; return s }, []string{"nothing of namespace hello-demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.edit(whole()).Missing()
			if len(got) != len(tt.wants) {
				t.Fatalf("Missing() = %q, want %d line(s) with %q", got, len(tt.wants), tt.wants)
			}
			for i, want := range tt.wants {
				if !strings.Contains(got[i], want) {
					t.Errorf("line %d %q lacks %q", i, got[i], want)
				}
			}
		})
	}
}
