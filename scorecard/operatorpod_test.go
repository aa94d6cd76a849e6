package scorecard

import (
	"slices"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The CSV's Deployment runs in the test namespace and watches it: OLM's
// downward-API WATCH_NAMESPACE gives way to the namespace, other variables
// stay.
func TestOperatorDeployment(t *testing.T) {
	fromOLM := corev1.EnvVar{Name: watchNamespaceEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}}
	other := corev1.EnvVar{Name: "HELM_CACHE_HOME", Value: "/tmp/helm"}
	tests := []struct {
		name string
		env  []corev1.EnvVar
		want []corev1.EnvVar
	}{
		{name: "OLM's WATCH_NAMESPACE replaced", env: []corev1.EnvVar{fromOLM, other},
			want: []corev1.EnvVar{{Name: watchNamespaceEnv, Value: "test-ns"}, other}},
		{name: "no WATCH_NAMESPACE: added", env: []corev1.EnvVar{other},
			want: []corev1.EnvVar{{Name: watchNamespaceEnv, Value: "test-ns"}, other}},
		{name: "no environment", want: []corev1.EnvVar{{Name: watchNamespaceEnv, Value: "test-ns"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := v1alpha1.StrategyDeploymentSpec{Name: "op-controller-manager", Label: map[string]string{"app": "op"},
				Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					ServiceAccountName: "op", Containers: []corev1.Container{{Name: "manager", Image: "registry/op:v1", Env: tt.env}}}}}}
			d := operatorDeployment(spec, "test-ns", []string{"test-ns"})
			if d.Name != spec.Name || d.Namespace != "test-ns" || d.Labels["app"] != "op" || d.Spec.Template.Spec.ServiceAccountName != "op" {
				t.Errorf("deployment %s/%s labels %v sa %s", d.Namespace, d.Name, d.Labels, d.Spec.Template.Spec.ServiceAccountName)
			}
			same := func(a, b corev1.EnvVar) bool {
				return a.Name == b.Name && a.Value == b.Value && (a.ValueFrom == nil) == (b.ValueFrom == nil)
			}
			if got := d.Spec.Template.Spec.Containers[0].Env; !slices.EqualFunc(got, tt.want, same) {
				t.Errorf("env %v, want %v", got, tt.want)
			}
			if kept := spec.Spec.Template.Spec.Containers[0].Env; !slices.EqualFunc(kept, tt.env, same) {
				t.Errorf("the CSV's env became %v", kept)
			}
		})
	}
}
