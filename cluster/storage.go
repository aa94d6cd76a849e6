package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// Dynamic volumes: kube-controller-manager's in-tree hostPath provisioner
// (--enable-hostpath-provisioner) gives every PersistentVolumeClaim of the
// default StorageClass a directory on this host. On a kwok node the claim
// only binds; on a real node pods mount it, and the volume-permissions
// component makes each new volume writable by non-root pods (the
// provisioner creates it as root, mode 0750, and the kubelet applies no
// fsGroup to hostPath volumes).
const (
	// StorageClass is the default StorageClass, installed at bootstrap.
	StorageClass = "standard"
	// HostPathDir is where the provisioner creates volumes, one directory
	// per volume: the path is fixed in its code (/tmp/hostpath_pv/UUID), so
	// volumes cannot live in the state directory. Down with Wipe removes
	// the cluster's own.
	HostPathDir = "/tmp/hostpath_pv"
	// hostPathProvisioner is the in-tree provisioner's name.
	hostPathProvisioner = "kubernetes.io/host-path"
	// defaultClassAnnotation marks the StorageClass of claims that name none.
	defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
)

// volumesRecord is the state file of the volumes' directories.
const volumesRecord = "volumes.json"

// VolumePermissions is the real node's component that makes new volumes
// writable by non-root pods.
const VolumePermissions = "volume-permissions"

// installStorageClass creates the default StorageClass. Claims bind at once
// (there is one node): on a kwok node no pod ever consumes them.
func installStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{defaultClassAnnotation: "true"},
		},
		Provisioner:       hostPathProvisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default StorageClass %s: %w", StorageClass, err)
	}
	return nil
}

// volumePermissions is the real node's component that fixes the mode of new
// volumes; its health is its socket.
func (c *Cluster) volumePermissions() component {
	socket := c.path("run", VolumePermissions+".sock")
	return component{
		name:   VolumePermissions,
		args:   []string{"-dir=" + HostPathDir, "-socket=" + socket},
		health: func(ctx context.Context) error { return dialUnix(ctx, socket) },
	}
}

// volumeDirs returns the directories of the cluster's provisioned volumes.
// While the API server runs it asks it, and records the answer in the
// state directory; once stopped, the record says (Down lists them before
// stopping anything, and a later Down with Wipe removes them).
func (c *Cluster) volumeDirs(ctx context.Context) ([]string, error) {
	record := c.path(volumesRecord)
	if _, running := process.Find(c.pidFile(APIServer)); !running {
		data, err := os.ReadFile(record)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var dirs []string
		if err := json.Unmarshal(data, &dirs); err != nil {
			return nil, fmt.Errorf("reading %s: %w", record, err)
		}
		return dirs, nil
	}
	cs, _, err := c.clients()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's volumes: %w", err)
	}
	dirs := []string{}
	for _, pv := range pvs.Items {
		if hp := pv.Spec.HostPath; hp != nil && underHostPathDir(hp.Path) {
			dirs = append(dirs, hp.Path)
		}
	}
	data, err := json.Marshal(dirs)
	if err != nil {
		return nil, err
	}
	return dirs, atomicfile.WriteFile(record, append(data, '\n'), 0o644)
}

// underHostPathDir says whether path is a volume directory of the
// provisioner, so that Down never removes anything else a PV names.
func underHostPathDir(path string) bool {
	rel, err := filepath.Rel(HostPathDir, filepath.Clean(path))
	return err == nil && rel != "." && !strings.Contains(rel, "/") && rel != ".."
}

// removeVolumes deletes the volume directories, once nothing mounts them.
func removeVolumes(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", d, err))
		}
	}
	_ = os.Remove(HostPathDir) // only if now empty: other clusters may use it
	return errors.Join(errs...)
}
