package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The node service bind-mounts a volume's directory where the kubelet
// asks; with no stage step (NodeGetCapabilities names none) the kubelet
// calls NodePublishVolume directly.

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

func (d *driver) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" || target == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "the volume ID, target path and capability are required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: %v", id, err)
	}
	var v volume
	if err := d.store.record(volumesDir, id, &v); err != nil {
		return nil, grpcError(err, "volume")
	}
	if err := publish(d.store.path(volumesDir, id), target, req.GetReadonly()); err != nil {
		return nil, status.Errorf(codes.Internal, "publishing volume %s at %s: %v", id, target, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "the volume ID and target path are required")
	}
	if err := unpublish(req.GetTargetPath()); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublishing volume %s from %s: %v", req.GetVolumeId(), req.GetTargetPath(), err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// publish bind-mounts src at target, read-only when asked; a target
// already mounted is left as it is (the kubelet repeats calls).
func publish(src, target string, readOnly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	mounted, err := isMountPoint(target)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	if readOnly {
		// A bind mount takes read-only only on a remount.
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return fmt.Errorf("remounting read-only: %w", err)
		}
	}
	return nil
}

// unpublish unmounts target and removes it; a target already gone is done.
func unpublish(target string) error {
	mounted, err := isMountPoint(target)
	if err != nil {
		return err
	}
	if mounted {
		if err := unix.Unmount(target, 0); err != nil {
			return fmt.Errorf("unmount: %w", err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// isMountPoint says whether path is a mount point, from the mount table
// (a bind mount of a directory of the same file system shares its device,
// so comparing devices would not tell).
func isMountPoint(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if p, ok := mountPoint(sc.Text()); ok && p == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

// mountPoint is the mount point of a line of /proc/self/mountinfo (its
// fifth field, with octal escapes for spaces and the like).
func mountPoint(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return "", false
	}
	return unescapeOctal(fields[4]), true
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
