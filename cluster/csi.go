package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/volumesnapshot"
)

// CSI storage on the real node: hostpath-csi, our own driver (volumes are
// directories under the state directory, snapshots are copies of them),
// behind the external provisioner and snapshotter sidecars and the
// snapshot controller, each a process on the host like the node's other
// agents. Claims of the CSIStorageClass get such volumes, and
// VolumeSnapshots of them use the default VolumeSnapshotClass
// SnapshotClass. The default StorageClass stays the in-tree hostPath one.
const (
	// CSIDriver is the driver's name: its CSIDriver object and provisioner.
	CSIDriver = "hostpath.csi.chartpilot.io"
	// CSIStorageClass is the StorageClass of the driver's volumes.
	CSIStorageClass = "csi-hostpath"
	// SnapshotClass is the driver's default VolumeSnapshotClass.
	SnapshotClass = "csi-hostpath"
)

// The CSI components, in start order.
const (
	HostPathCSI        = "hostpath-csi"
	SnapshotController = "snapshot-controller"
	CSIProvisioner     = "csi-provisioner"
	CSISnapshotter     = "csi-snapshotter"
)

// csiComponents are the CSI components' names.
var csiComponents = []string{HostPathCSI, SnapshotController, CSIProvisioner, CSISnapshotter}

// csiGroup is the group of the sidecars' client certificates, bound to
// csiRole: what the upstream manifests grant the three of them.
const (
	csiGroup = "chartpilot:csi"
	csiRole  = "chartpilot:csi"
)

// csiTimeout bounds one CSI call of a sidecar: a snapshot or a restore
// copies the volume, a gibibyte takes seconds.
const csiTimeout = "5m"

func (c *Cluster) csiSocket() string { return c.path("run", "csi.sock") }

// csiDataDir holds the driver's volumes and snapshots.
func (c *Cluster) csiDataDir() string { return c.path(csiStateDir) }

// csiStateDir is the driver's directory in the state directory.
const csiStateDir = "csi"

// csiNode are the CSI components of a real node, after the kubelet (the
// driver registers with it).
func (c *Cluster) csiNode(inst *toolchain.Installation) []component {
	p := c.state.Ports.CSI
	cfg := c.nodeConfig(inst)
	metrics := func(port int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return c.probe(ctx, plainHTTP, "http://"+loopback(port)+"/metrics", "")
		}
	}
	sidecar := func(name string, port int, args ...string) component {
		return component{
			name:  name,
			addrs: []string{loopback(port)},
			args: append([]string{"--kubeconfig=" + c.componentKubeconfig(name), "--http-endpoint=" + loopback(port),
				"--leader-election=false"}, args...),
			health: metrics(port),
		}
	}
	crds := ""
	if inst != nil {
		crds = inst.SnapshotCRDs
	}
	driver := component{
		name: HostPathCSI,
		args: []string{"-name=" + CSIDriver, "-node-id=" + NodeName, "-dir=" + c.csiDataDir(),
			"-endpoint=" + c.csiSocket(), "-registration-dir=" + filepath.Join(cfg.KubeletRoot(), "plugins_registry")},
		before: c.installCSIDriver,
		health: func(ctx context.Context) error { return dialUnix(ctx, c.csiSocket()) },
	}
	controller := sidecar(SnapshotController, p.SnapshotController)
	controller.before = func(ctx context.Context) error { return c.installSnapshotCRDs(ctx, crds) }
	provisioner := sidecar(CSIProvisioner, p.Provisioner, "--csi-address="+c.csiSocket(), "--timeout="+csiTimeout,
		"--extra-create-metadata")
	snapshotter := sidecar(CSISnapshotter, p.Snapshotter, "--csi-address="+c.csiSocket(), "--timeout="+csiTimeout,
		"--extra-create-metadata")
	snapshotter.after = c.installCSIClasses
	return []component{driver, controller, provisioner, snapshotter}
}

// installCSIDriver creates the CSIDriver object and the sidecars' role: no
// attach step, and the kubelet applies a pod's fsGroup to the volume.
func (c *Cluster) installCSIDriver(ctx context.Context) error {
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	d := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: CSIDriver},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			PodInfoOnMount:       ptr.To(false),
			FSGroupPolicy:        ptr.To(storagev1.FileFSGroupPolicy),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CSIDriver %s: %w", CSIDriver, err)
	}
	return installCSIRole(ctx, cs)
}

// csiRules are what the provisioner, the snapshotter and the snapshot
// controller do, together (their upstream RBAC, without leader election).
func csiRules() []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: read},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses", "csinodes", "volumeattachments"}, Verbs: read},
		{APIGroups: []string{snapv1.GroupName}, Resources: []string{"volumesnapshotclasses"}, Verbs: read},
		{APIGroups: []string{snapv1.GroupName}, Resources: []string{"volumesnapshots", "volumesnapshotcontents"}, Verbs: all},
		{APIGroups: []string{snapv1.GroupName}, Resources: []string{"volumesnapshots/status", "volumesnapshotcontents/status"}, Verbs: []string{"update", "patch"}},
	}
}

func installCSIRole(ctx context.Context, cs kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: csiRole}, Rules: csiRules()}
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating ClusterRole %s: %w", csiRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("updating ClusterRole %s: %w", csiRole, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: csiRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: csiRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: csiGroup}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", csiRole, err)
	}
	return nil
}

// installSnapshotCRDs applies the VolumeSnapshot CRDs and waits until they
// are served: the snapshot controller and the snapshotter need them.
func (c *Cluster) installSnapshotCRDs(ctx context.Context, dir string) error {
	crds, err := crdsIn(dir)
	if err != nil {
		return err
	}
	if err := c.applyCRDs(ctx, crds); err != nil {
		return fmt.Errorf("the VolumeSnapshot CRDs: %w", err)
	}
	return nil
}

// volumeSnapshotClasses is the resource of VolumeSnapshotClasses.
var volumeSnapshotClasses = schema.GroupVersionResource{Group: snapv1.GroupName, Version: "v1", Resource: "volumesnapshotclasses"}

// installCSIClasses creates the driver's StorageClass and its default
// VolumeSnapshotClass.
func (c *Cluster) installCSIClasses(ctx context.Context) error {
	began := time.Now()
	cs, dyn, err := c.clients()
	if err != nil {
		return err
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: CSIStorageClass},
		Provisioner:       CSIDriver,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", CSIStorageClass, err)
	}
	vsc := &snapv1.VolumeSnapshotClass{
		TypeMeta: metav1.TypeMeta{APIVersion: snapv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshotClass"},
		ObjectMeta: metav1.ObjectMeta{Name: SnapshotClass,
			Annotations: map[string]string{volumesnapshot.DefaultClassAnnotation: "true"}},
		Driver:         CSIDriver,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vsc)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	if _, err := dyn.Resource(volumeSnapshotClasses).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating VolumeSnapshotClass %s: %w", SnapshotClass, err)
	}
	fmt.Fprintf(c.opts.Out, "  %-24s StorageClass %s and VolumeSnapshotClass %s of driver %s in %s\n", "csi classes",
		CSIStorageClass, SnapshotClass, CSIDriver, time.Since(began).Round(10*time.Millisecond))
	return nil
}

// VolumeDir is the host directory of one of the cluster's volumes: a
// hostPath volume's path, or a directory of hostpath-csi's (its volume
// handle under the driver's volumes). Empty for any other volume.
func (c *Cluster) VolumeDir(pv *corev1.PersistentVolume) string {
	switch src := pv.Spec.PersistentVolumeSource; {
	case src.HostPath != nil:
		return src.HostPath.Path
	case src.CSI != nil && src.CSI.Driver == CSIDriver && filepath.Base(src.CSI.VolumeHandle) == src.CSI.VolumeHandle:
		return filepath.Join(c.csiDataDir(), "volumes", src.CSI.VolumeHandle)
	}
	return ""
}
