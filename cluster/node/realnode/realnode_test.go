package realnode_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/podhealth"
)

// TestRealNode starts a cluster whose node runs real containers, and proves
// what kwok cannot: an image built here is pulled from the local registry
// and runs as its non-root user, a readiness probe reaches its process,
// kubectl logs works, Services and cluster DNS route (OLM's operators run
// in pods and reach the API through the kubernetes Service), a missing
// image is named, and down leaves nothing on the host.
func TestRealNode(t *testing.T) {
	clustertest.RequireRealNode(t)
	decoys := clustertest.PlantDecoys(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out bytes.Buffer
	c, err := cluster.New(cluster.Options{StateDir: filepath.Join(t.TempDir(), "cluster"), Node: cluster.NodeReal, Out: &out, StartTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var volumeDir string // the volume testVolume's pods wrote into
	began := time.Now()
	upErr := c.Up(ctx)
	t.Logf("cluster up with a real node in %s:\n%s", time.Since(began).Round(time.Second), out.String())
	t.Cleanup(func() {
		out.Reset()
		began := time.Now()
		if err := c.Down(context.Background(), cluster.DownOptions{Wipe: true}); err != nil {
			t.Errorf("down: %v\n%s", err, out.String())
		}
		t.Logf("cluster down --wipe in %s", time.Since(began).Round(100*time.Millisecond))
		assertNothingLeft(t, c.StateDir())
		decoys.Check(t, "down")
		if _, err := os.Stat(volumeDir); volumeDir != "" && err == nil {
			t.Errorf("volume directory %s remains after down --wipe", volumeDir)
		}
	})
	if upErr != nil {
		t.Fatalf("up: %v", upErr)
	}
	decoys.Check(t, "up")
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	t.Run("operand image runs, probed, as its user", func(t *testing.T) {
		ref := images.Repository(c.RegistryAddr(), images.HelloServer) + ":local"
		began := time.Now()
		dep := helloDeployment("hello", ref)
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, ctx, cs, dep)
		t.Logf("Deployment of the registry's image available in %s", time.Since(began).Round(100*time.Millisecond))
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("pods: %v", err)
		}
		pod := pods.Items[0]
		if pod.Status.PodIP == "" || !strings.HasPrefix(pod.Status.PodIP, "10.88.") {
			t.Errorf("pod IP %q, want one of the pod network %s", pod.Status.PodIP, node.PodCIDR)
		}
		logs, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil || !strings.Contains(string(logs), "serving") {
			t.Errorf("kubectl logs: %q, %v", logs, err)
		}
		if uid := containerUID(t, pod); uid != "65532" {
			t.Errorf("the container runs as uid %s, want the image's non-root 65532", uid)
		}
	})

	t.Run("OLM runs in pods", func(t *testing.T) {
		for _, name := range []string{"olm-operator", "catalog-operator"} {
			d, err := cs.AppsV1().Deployments(cluster.OLMNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Status.AvailableReplicas < 1 {
				t.Errorf("deployment %s: %v available, %v", name, d.Status.AvailableReplicas, err)
			}
		}
	})

	t.Run("a broken entrypoint is named", func(t *testing.T) {
		dep := helloDeployment("broken", images.Repository(c.RegistryAddr(), images.HelloServer)+":local")
		dep.Spec.Template.Spec.Containers[0].Command = []string{"/no-such-entrypoint"}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var why string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			why = podhealth.Problems(ctx, cs, "default", dep.Spec.Selector)
			return strings.Contains(why, "no-such-entrypoint"), nil
		})
		if err != nil {
			t.Errorf("problems = %q, want the entrypoint named", why)
		}
	})

	t.Run("a claim keeps a non-root pod's file for the next pod", func(t *testing.T) {
		volumeDir = testVolume(t, ctx, cs, images.Repository(c.RegistryAddr(), images.OLM)+":local",
			images.Repository(c.RegistryAddr(), images.HelloServer)+":local")
	})

	t.Run("a pod reaches the object store", func(t *testing.T) {
		testObjectStore(t, ctx, c, cs)
	})

	t.Run("a missing image is named", func(t *testing.T) {
		ref := images.Repository(c.RegistryAddr(), "no-such-image") + ":v1"
		dep := helloDeployment("missing", ref)
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var why string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			why = podhealth.Problems(ctx, cs, "default", dep.Spec.Selector)
			return strings.Contains(why, "cannot pull image "+ref), nil
		})
		if err != nil {
			t.Errorf("problems = %q, want the image named", why)
		}
	})
}

// testVolume proves dynamic volumes on the real node: a claim of the
// default StorageClass binds, a pod running as uid 65532 (the images' user,
// with an fsGroup the kubelet cannot apply to hostPath volumes) writes a
// file into it, and a second pod, started after the first is deleted,
// reads it. The OLM image's cp does the writing and the reading; then the
// example's operand, hello-server, serves the file from the claim at
// /data/NAME. It returns the volume's directory on the host.
func testVolume(t *testing.T, ctx context.Context, cs kubernetes.Interface, image, helloImage string) string {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	runToCompletion(t, ctx, cs, cpPod("writer", image, "/bin/cp", "/data/written"))
	t.Logf("claim bound and written by a pod in %s", time.Since(began).Round(100*time.Millisecond))
	runToCompletion(t, ctx, cs, cpPod("reader", image, "/data/written", "/tmp/read"))

	got, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.HostPath == nil {
		t.Fatalf("volume of the claim: %v", err)
	}
	if st, err := os.Stat(pv.Spec.HostPath.Path); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("volume directory %s: %v, want an emptyDir's mode 0777 (volume-permissions)", pv.Spec.HostPath.Path, err)
	}
	st, err := os.Stat(filepath.Join(pv.Spec.HostPath.Path, "written"))
	if err != nil {
		t.Fatalf("the file the pod wrote is not in the volume's directory: %v", err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 65532 {
		t.Errorf("the file is owned by uid %d, want the pod's 65532", uid)
	}
	want, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "written"))
	if err != nil {
		t.Fatal(err)
	}
	if got := serveFromClaim(t, ctx, cs, helloImage, "/data/written"); !bytes.Equal(got, want) {
		t.Errorf("hello-server served %d bytes of /data/written, want the %d in the volume", len(got), len(want))
	}
	return pv.Spec.HostPath.Path
}

// serveFromClaim runs hello-server with the claim at /data (DATA_DIR, as
// the example chart sets it) and GETs path from the pod.
func serveFromClaim(t *testing.T, ctx context.Context, cs kubernetes.Interface, image, path string) []byte {
	t.Helper()
	dep := helloDeployment("data", image)
	spec := &dep.Spec.Template.Spec
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "DATA_DIR", Value: "/data"})
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ctx, cs, dep)
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=data"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods: %v", err)
	}
	resp, err := http.Get("http://" + net.JoinHostPort(pods.Items[0].Status.PodIP, "8080") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", path, resp.Status, err)
	}
	return body
}

// testObjectStore proves that pods reach the cluster's object store with
// credentials from a Secret: a pod running a real S3 client (minio-go,
// built from testdata into an image pushed to the local registry) reads
// an object the host put and puts one the host reads.
func testObjectStore(t *testing.T, ctx context.Context, c *cluster.Cluster, cs kubernetes.Interface) {
	store, err := c.ObjectStore()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(store.PodEndpoint, node.HostIP+":") {
		t.Fatalf("pod endpoint %q, want the host's address on the node's link %s", store.PodEndpoint, node.HostIP)
	}
	host, err := minio.New(store.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(store.AccessKeyID, store.SecretAccessKey, ""), Region: store.Region})
	if err != nil {
		t.Fatal(err)
	}
	if err := host.MakeBucket(ctx, "pods", minio.MakeBucketOptions{Region: store.Region}); err != nil {
		t.Fatal(err)
	}
	fromHost := "hello from the host"
	if _, err := host.PutObject(ctx, "pods", "from-host", strings.NewReader(fromHost), int64(len(fromHost)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "default"},
		StringData: map[string]string{
			"S3_ENDPOINT":           store.PodEndpoint,
			"AWS_REGION":            store.Region,
			"AWS_ACCESS_KEY_ID":     store.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY": store.SecretAccessKey,
		},
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fromPod := "hello from a pod"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "s3client", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:    "s3client",
				Image:   s3ClientImage(t, ctx, c.RegistryAddr()),
				Args:    []string{"pods", "from-host", "from-pod", fromPod},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}}}},
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	runToCompletion(t, ctx, cs, pod)
	obj, err := host.GetObject(ctx, "pods", "from-pod", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || string(got) != fromPod {
		t.Errorf("the pod's object: %q, %v; want %q", got, err, fromPod)
	}
}

// s3ClientImage builds testdata/s3client into an image on the empty base,
// run as the images' non-root user, and pushes it to the local registry.
func s3ClientImage(t *testing.T, ctx context.Context, registry string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "s3client")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/s3client")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the S3 client: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := ociimage.Tar([]ociimage.Entry{{Name: "s3client", Data: data, Mode: 0o755}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Scratch([][]byte{layer}, ociimage.Config{
		Platform:   v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Entrypoint: []string{"/s3client"},
		User:       "65532:65532",
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := images.Repository(registry, "s3client")
	digest, err := ociimage.Push(ctx, img, repo+":test")
	if err != nil {
		t.Fatal(err)
	}
	return repo + "@" + digest.String()
}

// cpPod runs the OLM image's cp once, non-root, with the claim at /data.
func cpPod(name, image, src, dst string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				FSGroup:        ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    "cp",
				Image:   image,
				Command: []string{"/bin/cp", src, dst},
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// runToCompletion creates the pod, waits for it to succeed and deletes it,
// waiting until it is gone.
func runToCompletion(t *testing.T, ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	pods := cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	if err != nil || phase != corev1.PodSucceeded {
		logs, _ := pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		t.Fatalf("pod %s: phase %s (%v), log %q", pod.Name, phase, err, logs)
	}
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s not deleted", pod.Name)
	}
}

func helloDeployment(name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: image,
					Env:   []corev1.EnvVar{{Name: "GREETING", Value: "hello from a real pod"}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 1,
					},
					SecurityContext: &corev1.SecurityContext{
						RunAsNonRoot:             ptr.To(true),
						ReadOnlyRootFilesystem:   ptr.To(true),
						AllowPrivilegeEscalation: ptr.To(false),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				}}},
			},
		},
	}
}

func waitAvailable(t *testing.T, ctx context.Context, cs kubernetes.Interface, dep *appsv1.Deployment) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas >= 1, nil
	})
	if err != nil {
		t.Fatalf("deployment %s not available: %s", dep.Name, podhealth.Problems(ctx, cs, dep.Namespace, dep.Spec.Selector))
	}
}

// containerUID finds the pod's container process on the host (its
// environment holds the greeting) and reads its user.
func containerUID(t *testing.T, pod corev1.Pod) string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("GREETING=hello from a real pod")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == "Uid:" {
				return f[1]
			}
		}
	}
	t.Fatalf("no process of pod %s found on the host", pod.Name)
	return ""
}

// assertNothingLeft checks that down removed the node's traces: no
// container process, no mount under the state directory, no network
// namespace, link or cgroup of the node's.
func assertNothingLeft(t *testing.T, stateDir string) {
	t.Helper()
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), stateDir+"/") {
		t.Errorf("mounts under %s remain after down", stateDir)
	}
	// A cgroup v1 host has the node's cgroup in each hierarchy, a v2 host
	// once in its single one.
	left, _ := filepath.Glob("/sys/fs/cgroup/*" + node.CgroupRoot)
	left = append(left, "/sys/fs/cgroup"+node.CgroupRoot)
	for _, p := range append(left, "/sys/class/net/"+node.HostLink, "/sys/class/net/"+node.Bridge, node.NetNSPath()) {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s remains after down", p)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte("GREETING=hello from a real pod")) {
			t.Errorf("container process %s remains after down", e.Name())
		}
	}
}
