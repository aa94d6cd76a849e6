package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// defaultCapacity is a volume's capacity when the claim asks for none.
const defaultCapacity int64 = 1 << 30

// driver is the CSI plugin: Identity, Controller and Node in one process,
// as there is one node.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	name, version, nodeID string
	store                 store
	logf                  func(string, ...any)

	// mu guards inFlight: the names of creates that are copying. The
	// sidecars time out and call again while a large copy runs; the
	// repeat is told to wait (Aborted), and finds the object once done.
	mu       sync.Mutex
	inFlight map[string]bool
}

func newDriver(name, nodeID, dir string) (*driver, error) {
	d := &driver{name: name, version: "local", nodeID: nodeID, store: store{dir: dir}, logf: log.Printf, inFlight: map[string]bool{}}
	if err := d.store.init(); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", dir, err)
	}
	return d, nil
}

// begin marks a create of key as running, or returns Aborted when one is.
func (d *driver) begin(key string) (done func(), err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inFlight[key] {
		return nil, status.Errorf(codes.Aborted, "%s is being created", key)
	}
	d.inFlight[key] = true
	return func() {
		d.mu.Lock()
		delete(d.inFlight, key)
		d.mu.Unlock()
	}, nil
}

// Identity.

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: d.version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller.

// controllerCaps are what the controller serves: no attach step (a
// node-local directory needs none), clones and snapshots.
var controllerCaps = []csi.ControllerServiceCapability_RPC_Type{
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	// The snapshotter checks a pre-provisioned content's handle (a
	// restore into another namespace) with it, and learns its size.
	csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range controllerCaps {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities accepts mounted volumes on this one node; a raw block
// device is not something a directory can be.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return errors.New("no volume capabilities")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return errors.New("block volumes are not supported: the volumes are directories")
		}
		if c.GetMount() == nil {
			return errors.New("a capability names no access type")
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
			// One node: every pod that mounts the volume is on it.
			csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		default:
			return fmt.Errorf("access mode %s is not supported", c.GetAccessMode().GetMode())
		}
	}
	return nil
}

// capacity is what a volume gets for a range: the required bytes, or the
// default within the limit.
func capacity(r *csi.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 || (limit > 0 && req > limit) {
		return 0, fmt.Errorf("invalid capacity range: required %d, limit %d", req, limit)
	}
	switch {
	case req > 0:
		return req, nil
	case limit > 0 && limit < defaultCapacity:
		return limit, nil
	}
	return defaultCapacity, nil
}

func (d *driver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "the volume's name is missing")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: %v", req.GetName(), err)
	}
	size, err := capacity(req.GetCapacityRange())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: %v", req.GetName(), err)
	}
	want := volume{ID: idFor(volumesDir, req.GetName()), Name: req.GetName(), Capacity: size}
	from := ""
	if src := req.GetVolumeContentSource(); src != nil {
		switch {
		case src.GetSnapshot() != nil:
			var snap snapshot
			if err := d.store.record(snapshotsDir, src.GetSnapshot().GetSnapshotId(), &snap); err != nil {
				return nil, grpcError(err, "the volume's source snapshot")
			}
			if snap.RestoreSize > size {
				return nil, status.Errorf(codes.OutOfRange, "volume %s asks for %d bytes, less than snapshot %s's %d", req.GetName(), size, snap.ID, snap.RestoreSize)
			}
			want.SourceSnapshot, from = snap.ID, d.store.path(snapshotsDir, snap.ID)
		case src.GetVolume() != nil:
			var v volume
			if err := d.store.record(volumesDir, src.GetVolume().GetVolumeId(), &v); err != nil {
				return nil, grpcError(err, "the volume's source volume")
			}
			want.SourceVolume, from = v.ID, d.store.path(volumesDir, v.ID)
		}
	}
	done, err := d.begin(want.ID)
	if err != nil {
		return nil, err
	}
	defer done()
	var have volume
	switch err := d.store.record(volumesDir, want.ID, &have); {
	case err == nil && have == want:
		return &csi.CreateVolumeResponse{Volume: want.csi(req.GetVolumeContentSource())}, nil
	case err == nil:
		return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with another capacity or source", req.GetName())
	case !errors.Is(err, errNotFound):
		return nil, status.Error(codes.Internal, err.Error())
	}
	began := time.Now()
	// The copy goes on if the caller gives up: its repeat finds it done.
	if _, err := d.store.fill(volumesDir, want.ID, from); err != nil {
		return nil, status.Errorf(codes.Internal, "creating volume %s: %v", req.GetName(), err)
	}
	if err := d.store.writeRecord(volumesDir, want.ID, want); err != nil {
		return nil, status.Errorf(codes.Internal, "recording volume %s: %v", req.GetName(), err)
	}
	d.logf("created volume %s (%s) of %d bytes in %s%s", want.ID, want.Name, want.Capacity, time.Since(began).Round(time.Millisecond), sourceNote(want))
	return &csi.CreateVolumeResponse{Volume: want.csi(req.GetVolumeContentSource())}, nil
}

func sourceNote(v volume) string {
	switch {
	case v.SourceSnapshot != "":
		return " from snapshot " + v.SourceSnapshot
	case v.SourceVolume != "":
		return " from volume " + v.SourceVolume
	}
	return ""
}

func (v volume) csi(src *csi.VolumeContentSource) *csi.Volume {
	return &csi.Volume{VolumeId: v.ID, CapacityBytes: v.Capacity, ContentSource: src}
}

func (d *driver) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "the volume ID is missing")
	}
	if err := d.store.remove(volumesDir, req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.Internal, "deleting volume %s: %v", req.GetVolumeId(), err)
	}
	d.logf("deleted volume %s", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" || len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "the volume ID and capabilities are required")
	}
	var v volume
	if err := d.store.record(volumesDir, req.GetVolumeId(), &v); err != nil {
		return nil, grpcError(err, "volume")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

func (d *driver) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "the snapshot's name and source volume are required")
	}
	var src volume
	if err := d.store.record(volumesDir, req.GetSourceVolumeId(), &src); err != nil {
		return nil, grpcError(err, "the snapshot's source volume")
	}
	id := idFor(snapshotsDir, req.GetName())
	done, err := d.begin(id)
	if err != nil {
		return nil, err
	}
	defer done()
	var have snapshot
	switch err := d.store.record(snapshotsDir, id, &have); {
	case err == nil && have.SourceVolume == src.ID:
		return &csi.CreateSnapshotResponse{Snapshot: have.csi()}, nil
	case err == nil:
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists, of volume %s", req.GetName(), have.SourceVolume)
	case !errors.Is(err, errNotFound):
		return nil, status.Error(codes.Internal, err.Error())
	}
	began := time.Now()
	n, err := d.store.fill(snapshotsDir, id, d.store.path(volumesDir, src.ID))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshotting volume %s: %v", src.ID, err)
	}
	snap := snapshot{ID: id, Name: req.GetName(), SourceVolume: src.ID, CreatedAt: began.UTC(), RestoreSize: src.Capacity, Bytes: n}
	if err := d.store.writeRecord(snapshotsDir, id, snap); err != nil {
		return nil, status.Errorf(codes.Internal, "recording snapshot %s: %v", req.GetName(), err)
	}
	d.logf("snapshot %s (%s) of volume %s: %d bytes copied in %s", id, snap.Name, src.ID, n, time.Since(began).Round(time.Millisecond))
	return &csi.CreateSnapshotResponse{Snapshot: snap.csi()}, nil
}

func (s snapshot) csi() *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId: s.ID, SourceVolumeId: s.SourceVolume, SizeBytes: s.RestoreSize,
		CreationTime: timestamppb.New(s.CreatedAt), ReadyToUse: true,
	}
}

func (d *driver) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "the snapshot ID is missing")
	}
	if err := d.store.remove(snapshotsDir, req.GetSnapshotId()); err != nil {
		return nil, status.Errorf(codes.Internal, "deleting snapshot %s: %v", req.GetSnapshotId(), err)
	}
	d.logf("deleted snapshot %s", req.GetSnapshotId())
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots answers for one snapshot ID or one source volume (what
// the snapshotter asks); paging is not needed at a test cluster's scale.
func (d *driver) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetStartingToken() != "" {
		return nil, status.Error(codes.Aborted, "no paging: every snapshot is in the first page")
	}
	snaps, err := d.store.snapshots()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "listing snapshots: %v", err)
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, s := range snaps {
		if id := req.GetSnapshotId(); id != "" && s.ID != id {
			continue
		}
		if v := req.GetSourceVolumeId(); v != "" && s.SourceVolume != v {
			continue
		}
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: s.csi()})
	}
	return resp, nil
}

// grpcError maps the store's errors to CSI's codes.
func grpcError(err error, what string) error {
	if errors.Is(err, errNotFound) {
		return status.Errorf(codes.NotFound, "%s: %v", what, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}
