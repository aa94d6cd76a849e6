// Command volume-permissions makes the volumes of kube-controller-manager's
// hostPath provisioner writable by non-root pods. The provisioner creates
// each volume as a directory of its own under a fixed directory, owned by
// root with mode 0750, and the kubelet applies no fsGroup to hostPath
// volumes: a pod running as uid 65532 could not write to its own claim.
// This gives every new volume the mode the kubelet gives an emptyDir
// (0777) as soon as it appears, watching the directory with inotify, and
// listens on a unix socket once it watches, for its health check.
//
// It runs as root, and the directory is in /tmp: it changes modes only
// under a directory that is its own (created by it, or owned by its user,
// no symlink, writable by no one else), and only through a handle on that
// directory (os.Root), so that a local user who made the path first, or
// swapped in a symlink, gets nothing made 0777.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
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
	v, err := openVolumes(dir)
	if err != nil {
		return err
	}
	defer v.close()
	w, err := watch(dir)
	if err != nil {
		return err
	}
	defer w.close()
	// Volumes created before the watch began.
	if err := v.fixAll(logf); err != nil {
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
				if err := v.reopen(); err != nil {
					logf("%v", err)
					continue
				}
				_ = v.fixAll(logf)
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
			v.fix(name, logf)
		}
	}
}

// volumes is the volumes' directory, held open once known to be ours.
type volumes struct {
	dir string
	mu  sync.Mutex
	// root is the directory as opened, ino its inode: when another
	// cluster removes and recreates the path, it is opened again.
	root *os.Root
	ino  uint64
}

// openVolumes creates dir if it is missing and opens it, refusing one that
// is not this process's own.
func openVolumes(dir string) (*volumes, error) {
	v := &volumes{dir: dir}
	return v, v.reopen()
}

// reopen opens the directory at the path again if it is another than the
// one held: created when missing, and checked to be ours.
func (v *volumes) reopen() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := os.Mkdir(v.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(v.dir)
	if err != nil {
		return err
	}
	if ino := st.Sys().(*syscall.Stat_t).Ino; v.root != nil && ino == v.ino {
		return nil
	}
	root, err := os.OpenRoot(v.dir)
	if err != nil {
		return err
	}
	// The directory as opened, not the path: a swap after the Lstat is
	// seen here.
	held, err := root.Stat(".")
	if err == nil {
		err = ownDirectory(st, held)
	}
	if err != nil {
		root.Close()
		return fmt.Errorf("volumes' directory %s: %w: remove it, or give volumes another directory", v.dir, err)
	}
	if v.root != nil {
		v.root.Close()
	}
	v.root, v.ino = root, held.Sys().(*syscall.Stat_t).Ino
	return nil
}

// ownDirectory checks that the path (at, from Lstat) and what was opened
// (held) are one directory, no symlink, owned by this process's user and
// writable by no one else.
func ownDirectory(at, held fs.FileInfo) error {
	a, h := at.Sys().(*syscall.Stat_t), held.Sys().(*syscall.Stat_t)
	switch {
	case at.Mode()&fs.ModeSymlink != 0:
		return errors.New("it is a symlink")
	case !held.IsDir():
		return errors.New("it is not a directory")
	case a.Dev != h.Dev || a.Ino != h.Ino:
		return errors.New("it changed while it was opened")
	case h.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("it is owned by uid %d, not this process's %d", h.Uid, os.Geteuid())
	case held.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("its mode %v lets others write to it", held.Mode().Perm())
	}
	return nil
}

func (v *volumes) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.root != nil {
		v.root.Close()
	}
}

// fixAll fixes every volume in the directory.
func (v *volumes) fixAll(logf func(string, ...any)) error {
	v.mu.Lock()
	root := v.root
	v.mu.Unlock()
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			v.fix(e.Name(), logf)
		}
	}
	return nil
}

// fix gives one volume (a name in the directory) the mode of an emptyDir,
// unless it has it. Through the Root, nothing outside the directory is
// reached, whatever the name has become.
func (v *volumes) fix(name string, logf func(string, ...any)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st, err := v.root.Lstat(name)
	if err != nil || !st.IsDir() || st.Mode().Perm() == volumeMode {
		return
	}
	path := filepath.Join(v.dir, name)
	if err := v.root.Chmod(name, volumeMode); err != nil {
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
