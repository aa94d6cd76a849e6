// Command volume-permissions makes the volumes of kube-controller-manager's
// hostPath provisioner writable by non-root pods. The provisioner creates
// each volume as a directory of its own under a fixed directory, owned by
// root with mode 0750, and the kubelet applies no fsGroup to hostPath
// volumes: a pod running as uid 65532 could not write to its own claim.
// This gives every new volume the mode the kubelet gives an emptyDir
// (0777) as soon as it appears, watching the directory with inotify, and
// listens on a unix socket once it watches, for its health check.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// volumeMode is an emptyDir's mode: any pod user may write.
const volumeMode fs.FileMode = 0o777

func main() {
	dir := flag.String("dir", "/tmp/hostpath_pv", "the directory the hostPath provisioner creates volumes in")
	socket := flag.String("socket", "", "a unix socket to listen on once watching (the health check)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *socket, log.Printf); err != nil {
		log.Fatal(err)
	}
}

// run watches dir until ctx ends, fixing the mode of each volume.
func run(ctx context.Context, dir, socket string, logf func(string, ...any)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w, err := watch(dir)
	if err != nil {
		return err
	}
	defer w.close()
	// Volumes created before the watch began.
	if err := fixAll(dir, logf); err != nil {
		return err
	}
	if socket != "" {
		l, err := listen(socket)
		if err != nil {
			return err
		}
		defer l.Close()
	}
	logf("watching %s: new volumes get mode %v", dir, volumeMode)
	go func() {
		<-ctx.Done()
		w.close()
	}()
	// The directory is shared by every cluster on the machine: when one
	// removes and recreates it, the watch sees nothing more. A rescan every
	// second catches what the watch missed.
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = os.MkdirAll(dir, 0o755)
				_ = fixAll(dir, logf)
			}
		}
	}()
	for {
		names, err := w.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, name := range names {
			fix(filepath.Join(dir, name), logf)
		}
	}
}

// fixAll fixes every volume in dir.
func fixAll(dir string, logf func(string, ...any)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			fix(filepath.Join(dir, e.Name()), logf)
		}
	}
	return nil
}

// fix gives one volume the mode of an emptyDir, unless it has it.
func fix(path string, logf func(string, ...any)) {
	st, err := os.Lstat(path)
	if err != nil || !st.IsDir() || st.Mode().Perm() == volumeMode {
		return
	}
	if err := os.Chmod(path, volumeMode); err != nil {
		logf("volume %s: %v", path, err)
		return
	}
	logf("volume %s: mode %v -> %v", path, st.Mode().Perm(), volumeMode)
}

// listen serves the health socket: connections are accepted and closed.
func listen(path string) (net.Listener, error) {
	_ = os.Remove(path) // left by a process that was killed
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("health socket: %w", err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l, nil
}

// watcher reports the directories created in or moved into one directory.
type watcher struct {
	// f is the inotify descriptor, non-blocking so that the runtime's
	// poller waits on it and close interrupts a read.
	f   *os.File
	buf []byte
}

func watch(dir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	return &watcher{f: f, buf: make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))}, nil
}

// next blocks until directories appear and returns their names.
func (w *watcher) next() ([]string, error) {
	for {
		n, err := w.f.Read(w.buf)
		if err != nil {
			return nil, err
		}
		if names := dirEvents(w.buf[:n]); len(names) > 0 {
			return names, nil
		}
	}
}

func (w *watcher) close() { w.f.Close() }

// dirEvents decodes inotify events and returns the names of directories
// they report.
func dirEvents(buf []byte) []string {
	var names []string
	for len(buf) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(buf[4:8])
		nameLen := int(binary.NativeEndian.Uint32(buf[12:16]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(buf) {
			break
		}
		name := string(buf[unix.SizeofInotifyEvent:end])
		for len(name) > 0 && name[len(name)-1] == 0 { // NUL-padded
			name = name[:len(name)-1]
		}
		if mask&unix.IN_ISDIR != 0 && name != "" {
			names = append(names, name)
		}
		buf = buf[end:]
	}
	return names
}
