// Package volumesnapshot holds what the local cluster and the backup
// runtime agree on about CSI VolumeSnapshots (snapshot.storage.k8s.io/v1)
// beyond the API types of the snapshotter's client module.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package volumesnapshot
