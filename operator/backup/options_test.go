package backup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The mover runs exactly the operator's binary: the digest the kubelet
// resolved for the operator's container, on the image's repository.
func TestImageOf(t *testing.T) {
	tests := []struct{ image, imageID, want string }{
		{"reg.local:5000/op:v1", "reg.local:5000/op@sha256:abc", "reg.local:5000/op@sha256:abc"},
		{"reg.local:5000/op:v1", "", "reg.local:5000/op:v1"},
		{"op", "docker.io/library/op@sha256:abc", "op@sha256:abc"},
		{"reg.local:5000/op@sha256:old", "x@sha256:new", "reg.local:5000/op@sha256:new"},
	}
	for _, tt := range tests {
		pod := podWith("manager", tt.image, tt.imageID)
		if got := imageOf(pod, "manager", tt.image); got != tt.want {
			t.Errorf("imageOf(%q, %q) = %q, want %q", tt.image, tt.imageID, got, tt.want)
		}
	}
}

// Names are deterministic, unique per part and at most 63 characters.
func TestShorten(t *testing.T) {
	long := "a-very-long-backup-name-that-goes-on-and-on-past-the-limit-of-names"
	a, b := shorten(long, "backup", "data-0"), shorten(long, "backup", "data-1")
	if a == b || len(a) > 63 || len(b) > 63 || a != shorten(long, "backup", "data-0") {
		t.Errorf("shorten: %q, %q", a, b)
	}
	if got := shorten("nightly", "contents", ""); got != "nightly-contents" {
		t.Errorf("shorten(nightly, contents) = %q", got)
	}
}

func podWith(container, image, imageID string) corev1.Pod {
	return corev1.Pod{
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: image}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: container, ImageID: imageID}}},
	}
}
