package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// clients are the driver's services as the sidecars and the kubelet see them.
type clients struct {
	id   csi.IdentityClient
	ctrl csi.ControllerClient
	node csi.NodeClient
	reg  registerapi.RegistrationClient
	dir  string
}

// startDriver serves a driver on unix sockets in a temp dir, through run.
func startDriver(t *testing.T) clients {
	t.Helper()
	dir := t.TempDir()
	o := options{name: "test.csi.example", nodeID: "node-1", dir: filepath.Join(dir, "data"),
		endpoint: filepath.Join(dir, "csi.sock"), registrationDir: filepath.Join(dir, "registry")}
	srv, err := listen(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	dial := func(path string) *grpc.ClientConn {
		conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", path)
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	conn := dial(o.endpoint)
	return clients{id: csi.NewIdentityClient(conn), ctrl: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn),
		reg: registerapi.NewRegistrationClient(dial(filepath.Join(o.registrationDir, registrationSocket))), dir: o.dir}
}

var mountRW = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

func volumeReq(name string, size int64, src *csi.VolumeContentSource) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountRW},
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeContentSource: src}
}

func fromSnapshot(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v; want code %s", what, err, code)
	}
}

// TestIdentityAndRegistration: what the sidecars and the kubelet's plugin
// watcher ask first.
func TestIdentityAndRegistration(t *testing.T) {
	c := startDriver(t)
	ctx := context.Background()
	info, err := c.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.Name != "test.csi.example" {
		t.Fatalf("GetPluginInfo: %v, %v", info, err)
	}
	caps, err := c.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil || len(caps.Capabilities) != len(controllerCaps) {
		t.Fatalf("ControllerGetCapabilities: %v, %v", caps, err)
	}
	reg, err := c.reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || reg.Type != registerapi.CSIPlugin || reg.Name != "test.csi.example" || filepath.Base(reg.Endpoint) != "csi.sock" {
		t.Fatalf("GetInfo: %v, %v", reg, err)
	}
	node, err := c.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || node.NodeId != "node-1" {
		t.Fatalf("NodeGetInfo: %v, %v", node, err)
	}
}

// TestBadRequests: each malformed or impossible request gets CSI's code.
func TestBadRequests(t *testing.T) {
	c := startDriver(t)
	ctx := context.Background()
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: mountRW.AccessMode}
	tests := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"volume without a name", func() error { _, err := c.ctrl.CreateVolume(ctx, volumeReq("", 1, nil)); return err }, codes.InvalidArgument},
		{"block volume", func() error {
			_, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "b", VolumeCapabilities: []*csi.VolumeCapability{block}})
			return err
		}, codes.InvalidArgument},
		{"no capabilities", func() error {
			_, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "b"})
			return err
		}, codes.InvalidArgument},
		{"from a missing snapshot", func() error {
			_, err := c.ctrl.CreateVolume(ctx, volumeReq("v", 1, fromSnapshot("snap-0")))
			return err
		}, codes.NotFound},
		{"from a snapshot ID escaping the store", func() error {
			_, err := c.ctrl.CreateVolume(ctx, volumeReq("v", 1, fromSnapshot("../volumes")))
			return err
		}, codes.NotFound},
		{"snapshot of a missing volume", func() error {
			_, err := c.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "vol-0"})
			return err
		}, codes.NotFound},
		{"snapshot without a name", func() error {
			_, err := c.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: "vol-0"})
			return err
		}, codes.InvalidArgument},
		{"publish of a missing volume", func() error {
			_, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-0", TargetPath: filepath.Join(c.dir, "t"), VolumeCapability: mountRW})
			return err
		}, codes.NotFound},
		{"publish without a target", func() error {
			_, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-0", VolumeCapability: mountRW})
			return err
		}, codes.InvalidArgument},
		{"delete without an ID", func() error { _, err := c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{}); return err }, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.name, tt.call(), tt.code) })
	}
}

// TestSnapshotRestore: a volume is snapshotted, changed, and a volume made
// from the snapshot holds the files as they were; creates repeat
// idempotently, conflicting ones are refused, deletes repeat harmlessly.
func TestSnapshotRestore(t *testing.T) {
	c := startDriver(t)
	ctx := context.Background()
	vol, err := c.ctrl.CreateVolume(ctx, volumeReq("pvc-a", 10<<20, nil))
	if err != nil {
		t.Fatal(err)
	}
	id := vol.Volume.VolumeId
	dir := filepath.Join(c.dir, volumesDir, id)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != volumeMode {
		t.Fatalf("volume directory: %v, %v", fi, err)
	}
	again, err := c.ctrl.CreateVolume(ctx, volumeReq("pvc-a", 10<<20, nil))
	if err != nil || again.Volume.VolumeId != id {
		t.Errorf("repeated CreateVolume: %v, %v", again, err)
	}
	_, err = c.ctrl.CreateVolume(ctx, volumeReq("pvc-a", 20<<20, nil))
	wantCode(t, "CreateVolume of an existing name with another size", err, codes.AlreadyExists)

	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := c.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Snapshot
	if !s.ReadyToUse || s.SourceVolumeId != id || s.SizeBytes != 10<<20 || s.CreationTime == nil {
		t.Errorf("snapshot: %v", s)
	}
	if again, err := c.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: id}); err != nil || again.Snapshot.SnapshotId != s.SnapshotId {
		t.Errorf("repeated CreateSnapshot: %v, %v", again, err)
	}
	other, err := c.ctrl.CreateVolume(ctx, volumeReq("pvc-b", 1<<20, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: other.Volume.VolumeId})
	wantCode(t, "CreateSnapshot of an existing name from another volume", err, codes.AlreadyExists)

	list, err := c.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: s.SnapshotId})
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Snapshot.SizeBytes != s.SizeBytes {
		t.Errorf("ListSnapshots by ID: %v, %v", list, err)
	}
	if list, err := c.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: "snap-0"}); err != nil || len(list.Entries) != 0 {
		t.Errorf("ListSnapshots of an unknown ID: %v, %v", list, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("after"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.ctrl.CreateVolume(ctx, volumeReq("pvc-small", 1<<20, fromSnapshot(s.SnapshotId)))
	wantCode(t, "a restore smaller than the snapshot", err, codes.OutOfRange)
	restored, err := c.ctrl.CreateVolume(ctx, volumeReq("pvc-c", 10<<20, fromSnapshot(s.SnapshotId)))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Volume.ContentSource.GetSnapshot().GetSnapshotId() != s.SnapshotId {
		t.Errorf("restored volume's source: %v", restored.Volume.ContentSource)
	}
	data, err := os.ReadFile(filepath.Join(c.dir, volumesDir, restored.Volume.VolumeId, "marker"))
	if err != nil || string(data) != "before" {
		t.Errorf("restored marker: %q, %v; want %q", data, err, "before")
	}

	for range 2 { // deletes are idempotent
		if _, err := c.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: s.SnapshotId}); err != nil {
			t.Errorf("DeleteSnapshot: %v", err)
		}
		if _, err := c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	}
	for _, p := range []string{dir, filepath.Join(c.dir, snapshotsDir, s.SnapshotId)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after delete: %v", p, err)
		}
	}
}

// TestPublish bind-mounts a volume as the kubelet asks, read-write and
// read-only, and unmounts it (root only: mounting needs it).
func TestPublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	c := startDriver(t)
	ctx := context.Background()
	vol, err := c.ctrl.CreateVolume(ctx, volumeReq("pvc-p", 1<<20, nil))
	if err != nil {
		t.Fatal(err)
	}
	id := vol.Volume.VolumeId
	for _, readOnly := range []bool{false, true} {
		target := filepath.Join(t.TempDir(), "pods", "uid", "mount")
		req := &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountRW, Readonly: readOnly}
		for range 2 { // the kubelet repeats calls
			if _, err := c.node.NodePublishVolume(ctx, req); err != nil {
				t.Fatalf("NodePublishVolume (read-only %v): %v", readOnly, err)
			}
		}
		err := os.WriteFile(filepath.Join(target, "w"), []byte("x"), 0o644)
		switch {
		case readOnly && !errors.Is(err, syscall.EROFS):
			t.Errorf("write to a read-only publish: %v; want EROFS", err)
		case !readOnly && err != nil:
			t.Errorf("write to a read-write publish: %v", err)
		}
		if _, err := os.Stat(filepath.Join(c.dir, volumesDir, id, "w")); err != nil {
			t.Errorf("the write through the mount is not in the volume: %v", err)
		}
		for range 2 {
			if _, err := c.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
				t.Fatalf("NodeUnpublishVolume: %v", err)
			}
		}
		if mounted, _ := isMountPoint(target); mounted {
			t.Errorf("%s still mounted", target)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("target left: %v", err)
		}
	}
}
