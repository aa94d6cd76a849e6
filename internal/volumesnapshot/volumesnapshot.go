package volumesnapshot

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

// DefaultClassAnnotation marks the VolumeSnapshotClass a driver's
// snapshots use when they name none (the snapshot controller's key).
const DefaultClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

// IsDefault reports whether a class is its driver's default.
func IsDefault(c *snapv1.VolumeSnapshotClass) bool {
	return c.Annotations[DefaultClassAnnotation] == "true"
}

// ClassFor picks the VolumeSnapshotClass for a driver's volumes among
// classes: the one named when name is set (nil unless it is that
// driver's), else the driver's default one, else nil.
func ClassFor(classes []snapv1.VolumeSnapshotClass, driver, name string) *snapv1.VolumeSnapshotClass {
	for i := range classes {
		c := &classes[i]
		if c.Driver != driver {
			continue
		}
		if name != "" && c.Name == name || name == "" && IsDefault(c) {
			return c
		}
	}
	return nil
}
