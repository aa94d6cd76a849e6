package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Releases reads a release from Helm's storage (release.Client does).
type Releases interface {
	Latest(ctx context.Context, namespace, name string) (*helmrelease.Release, error)
}

// Options configure the backup and restore reconcilers of one watched kind.
type Options struct {
	// Watched is the kind whose CRs are backed up.
	Watched schema.GroupVersionKind
	// Client reads the Backups and Restores (from the cache) and writes.
	Client client.Client
	// Reader reads from the API server: pods, claims, Secrets and CRs are
	// not all in the operator's cache.
	Reader client.Reader
	// Releases reads the source's release.
	Releases Releases
	// Config reaches pods/exec for hooks.
	Config *rest.Config
	// MoverImage is the image of the mover pods: the operator's own. Empty
	// means the image of the operator's pod, found through POD_NAME and
	// POD_NAMESPACE (the downward API), or CHARTPILOT_MOVER_IMAGE.
	MoverImage string
	// Recorder emits events on Backups and Restores; nil emits none.
	Recorder record.EventRecorder
	// Log is the reconcilers' logger.
	Log logr.Logger
	// Schedules runs the <Kind>BackupSchedule controller too (its CRD is
	// served).
	Schedules bool
	// Now is the clock; default time.Now.
	Now func() time.Time

	// resolved caches the image found; shared by the copies of Options.
	resolved *imageResolver
}

type imageResolver struct {
	mu    sync.Mutex
	image string
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.resolved == nil {
		o.resolved = &imageResolver{}
	}
}

// Environment variables that name the mover image.
const (
	MoverImageEnv   = "CHARTPILOT_MOVER_IMAGE"
	PodNameEnv      = "POD_NAME"
	PodNamespaceEnv = "POD_NAMESPACE"
)

// ErrNoMoverImage means the operator could not tell its own image.
var ErrNoMoverImage = errors.New("no image for the mover pods: run the operator in a pod with POD_NAME and POD_NAMESPACE from the downward API (the scaffold sets them), or set " + MoverImageEnv)

// moverImage resolves the mover image once.
func (o *Options) moverImage(ctx context.Context) (string, error) {
	if o.MoverImage != "" {
		return o.MoverImage, nil
	}
	// Found once; a failure (the API server away) is tried again.
	ir := o.resolved
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.image == "" {
		img, err := ownImage(ctx, o.Reader)
		if err != nil {
			return "", err
		}
		ir.image = img
	}
	return ir.image, nil
}

// ownImage is the image of the container of this operator's pod that runs
// the runtime.
func ownImage(ctx context.Context, r client.Reader) (string, error) {
	if img := os.Getenv(MoverImageEnv); img != "" {
		return img, nil
	}
	name, ns := os.Getenv(PodNameEnv), os.Getenv(PodNamespaceEnv)
	if name == "" || ns == "" {
		return "", ErrNoMoverImage
	}
	var pod corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return "", fmt.Errorf("reading the operator's pod %s/%s for its image: %w", ns, name, err)
	}
	for _, c := range pod.Spec.Containers {
		for _, arg := range append(c.Command, c.Args...) {
			if arg == MoverBinary || arg == "run" {
				return imageOf(pod, c.Name, c.Image), nil
			}
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return "", ErrNoMoverImage
	}
	return imageOf(pod, pod.Spec.Containers[0].Name, pod.Spec.Containers[0].Image), nil
}

// imageOf prefers the digest the kubelet resolved: the mover then runs
// exactly the operator's binary.
func imageOf(pod corev1.Pod, container, image string) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container && cs.ImageID != "" {
			if i := indexDigest(cs.ImageID); i >= 0 {
				return repository(image) + cs.ImageID[i:]
			}
		}
	}
	return image
}

func indexDigest(ref string) int {
	for i := 0; i+7 < len(ref); i++ {
		if ref[i:i+8] == "@sha256:" {
			return i
		}
	}
	return -1
}

// repository strips the tag or digest of an image reference.
func repository(image string) string {
	if i := indexDigest(image); i >= 0 {
		return image[:i]
	}
	slash := -1
	for i := range image {
		if image[i] == '/' {
			slash = i
		}
	}
	for i := len(image) - 1; i > slash; i-- {
		if image[i] == ':' {
			return image[:i]
		}
	}
	return image
}

func (o *Options) event(obj *unstructured.Unstructured, typ, reason, msg string) {
	if o.Recorder != nil {
		o.Recorder.Event(obj, typ, reason, msg)
	}
}

// Environment variables of an S3 mover's credentials, from the target's
// Secret (never in the pod's spec).
const (
	S3AccessKeyEnv = "AWS_ACCESS_KEY_ID"
	S3SecretKeyEnv = "AWS_SECRET_ACCESS_KEY"
)
