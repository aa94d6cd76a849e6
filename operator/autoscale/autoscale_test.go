package autoscale

import (
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func TestSplit(t *testing.T) {
	plain := &chart.Chart{Values: map[string]any{"replicas": 1}}
	// helmCreate is a chart with `helm create`'s autoscaling values.
	helmCreate := &chart.Chart{Values: map[string]any{Field: map[string]any{"enabled": false}}}
	// schemaOnly declares the field in values.schema.json alone.
	schemaOnly := &chart.Chart{Schema: []byte(`{"properties":{"autoscaling":{"type":"object"}}}`)}
	on := map[string]any{"enabled": true, "maxReplicas": int64(5)}
	tests := []struct {
		name     string
		chart    *chart.Chart
		spec     any
		wantSpec any
		want     *Spec
		wantErr  bool
	}{
		{name: "no field", chart: plain, spec: map[string]any{"a": 1}, wantSpec: map[string]any{"a": 1}},
		{name: "nil spec", chart: plain, spec: nil, wantSpec: nil},
		{name: "operator's field, defaults applied", chart: plain, spec: map[string]any{"a": 1, Field: on},
			wantSpec: map[string]any{"a": 1}, want: &Spec{Enabled: true, MinReplicas: 1, MaxReplicas: 5, TargetCPUUtilizationPercentage: 80}},
		{name: "memory target alone keeps cpu off", chart: plain,
			spec:     map[string]any{Field: map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 3, "targetMemoryUtilizationPercentage": 70}},
			wantSpec: map[string]any{}, want: &Spec{Enabled: true, MinReplicas: 2, MaxReplicas: 3, TargetMemoryUtilizationPercentage: 70}},
		{name: "disabled", chart: plain, spec: map[string]any{Field: map[string]any{"enabled": false}}, wantSpec: map[string]any{}, want: &Spec{}},
		{name: "null field", chart: plain, spec: map[string]any{Field: nil}, wantSpec: map[string]any{}},
		{name: "chart's values own it", chart: helmCreate, spec: map[string]any{Field: on}, wantSpec: map[string]any{Field: on}},
		{name: "chart's schema owns it", chart: schemaOnly, spec: map[string]any{Field: on}, wantSpec: map[string]any{Field: on}},
		{name: "max below min", chart: plain, spec: map[string]any{Field: map[string]any{"enabled": true, "minReplicas": 3, "maxReplicas": 2}}, wantErr: true},
		{name: "max missing", chart: plain, spec: map[string]any{Field: map[string]any{"enabled": true}}, wantErr: true},
		{name: "not an object", chart: plain, spec: map[string]any{Field: "yes"}, wantErr: true},
		{name: "negative target", chart: plain, spec: map[string]any{Field: map[string]any{"enabled": true, "maxReplicas": 2, "targetCPUUtilizationPercentage": -1}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, got, err := Split(ChartOwns(tt.chart), tt.spec)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(spec, tt.wantSpec) {
				t.Errorf("spec %v, want %v", spec, tt.wantSpec)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("autoscaling %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSplitLeavesTheCRAlone(t *testing.T) {
	spec := map[string]any{"a": 1, Field: map[string]any{"enabled": true, "maxReplicas": 2}}
	if _, _, err := Split(false, spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := spec[Field]; !ok {
		t.Error("Split changed the CR's spec")
	}
}

func TestDigest(t *testing.T) {
	a := &Spec{Enabled: true, MinReplicas: 1, MaxReplicas: 3}
	b := &Spec{Enabled: true, MinReplicas: 1, MaxReplicas: 4}
	tests := []struct {
		name  string
		s     *Spec
		empty bool
	}{
		{name: "nil", s: nil, empty: true},
		{name: "disabled", s: &Spec{MaxReplicas: 3}, empty: true},
		{name: "on", s: a},
	}
	for _, tt := range tests {
		if got := tt.s.Digest(); (got == "") != tt.empty {
			t.Errorf("%s: digest %q", tt.name, got)
		}
	}
	if a.Digest() == b.Digest() {
		t.Error("different specs, same digest")
	}
}

func objects(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

const (
	deployment  = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`
	statefulSet = `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db}, spec: {replicas: 1}}`
	sameName    = `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web}, spec: {replicas: 1}}`
	daemonSet   = `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent}, spec: {}}`
	configMap   = `{apiVersion: v1, kind: ConfigMap, metadata: {name: web}}`
	chartHPA    = `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: own}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 1, maxReplicas: 9}}`
)

func TestRender(t *testing.T) {
	on := &Spec{Enabled: true, MinReplicas: 2, MaxReplicas: 5, TargetCPUUtilizationPercentage: 60}
	tests := []struct {
		name string
		docs []string
		spec *Spec
		// want lists kind/name of each object, in order, with "-r" when
		// it keeps spec.replicas.
		want []string
	}{
		{name: "off: nothing added, replicas kept", docs: []string{deployment, configMap}, spec: nil,
			want: []string{"Deployment/web-r", "ConfigMap/web"}},
		{name: "disabled", docs: []string{deployment}, spec: &Spec{MaxReplicas: 3},
			want: []string{"Deployment/web-r"}},
		{name: "on: an HPA per workload, after it", docs: []string{deployment, configMap, statefulSet, daemonSet}, spec: on,
			want: []string{"Deployment/web", "HorizontalPodAutoscaler/web", "ConfigMap/web", "StatefulSet/db", "HorizontalPodAutoscaler/db", "DaemonSet/agent"}},
		{name: "two workloads of one name", docs: []string{deployment, sameName}, spec: on,
			want: []string{"Deployment/web", "HorizontalPodAutoscaler/web-deployment", "StatefulSet/web", "HorizontalPodAutoscaler/web-statefulset"}},
		{name: "the chart's HPA: nothing added, its target loses replicas", docs: []string{deployment, statefulSet, chartHPA}, spec: on,
			want: []string{"Deployment/web", "StatefulSet/db-r", "HorizontalPodAutoscaler/own"}},
		{name: "the chart's HPA without the CR asking", docs: []string{chartHPA, deployment}, spec: nil,
			want: []string{"HorizontalPodAutoscaler/own", "Deployment/web"}},
		{name: "no workload", docs: []string{configMap}, spec: on, want: []string{"ConfigMap/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range Render(objects(t, tt.docs...), tt.spec) {
				id := o.GetKind() + "/" + o.GetName()
				if _, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas"); ok {
					id += "-r"
				}
				got = append(got, id)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestHPA(t *testing.T) {
	w := objects(t, deployment)[0]
	w.SetNamespace("team")
	got := HPA(w, "web", &Spec{Enabled: true, MinReplicas: 2, MaxReplicas: 5, TargetCPUUtilizationPercentage: 60, TargetMemoryUtilizationPercentage: 70})
	want := objects(t, `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: team, labels: {app: web}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}}
  - {type: Resource, resource: {name: memory, target: {type: Utilization, averageUtilization: 70}}}
`)[0]
	a, _ := yaml.Marshal(got.Object)
	b, _ := yaml.Marshal(want.Object)
	if string(a) != string(b) {
		t.Errorf("HPA:\n%s\nwant:\n%s", a, b)
	}
}
