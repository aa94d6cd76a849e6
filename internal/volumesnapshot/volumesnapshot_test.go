package volumesnapshot

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassFor(t *testing.T) {
	class := func(name, driver string, isDefault bool) snapv1.VolumeSnapshotClass {
		c := snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver}
		if isDefault {
			c.Annotations = map[string]string{DefaultClassAnnotation: "true"}
		}
		return c
	}
	classes := []snapv1.VolumeSnapshotClass{
		class("other-default", "other.csi", true),
		class("plain", "a.csi", false),
		class("a-default", "a.csi", true),
	}
	tests := []struct {
		name, driver, class, want string
	}{
		{name: "the driver's default", driver: "a.csi", want: "a-default"},
		{name: "a named class of the driver", driver: "a.csi", class: "plain", want: "plain"},
		{name: "a named class of another driver", driver: "a.csi", class: "other-default"},
		{name: "a driver without classes", driver: "kubernetes.io/host-path"},
		{name: "a named class that does not exist", driver: "a.csi", class: "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClassFor(classes, tt.driver, tt.class)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got class %s, want none", got.Name)
			case tt.want != "" && (got == nil || got.Name != tt.want):
				t.Errorf("got %v, want class %s", got, tt.want)
			}
		})
	}
}
