package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/netns"
)

// ErrNotRunning is returned by Stop when no process of the pid file is alive.
var ErrNotRunning = errors.New("not running")

// Spec describes a daemon.
type Spec struct {
	// Name is for messages.
	Name string
	// Path is the executable; it also identifies the process in the pid file.
	Path string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// LogFile receives stdout and stderr, appended.
	LogFile string
	// PIDFile records the process so that a later command can find it.
	PIDFile string
	// NetNS, when set, is the network namespace (a /run/netns file) the
	// daemon runs in.
	NetNS string
}

// Daemon is a process started by this program.
type Daemon struct {
	spec   Spec
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts the daemon in a session of its own, so that it survives this
// program and can be stopped as a group.
func Start(spec Spec) (*Daemon, error) {
	if err := os.MkdirAll(filepath.Dir(spec.LogFile), 0o755); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	log, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	defer log.Close() // the child holds its own descriptor
	fmt.Fprintf(log, "\n%s %s started at %s: %s %s\n", startMarker, spec.Name, time.Now().Format(time.RFC3339), spec.Path, strings.Join(spec.Args, " "))

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := cmd.Start
	if spec.NetNS != "" {
		start = func() error { return netns.Do(spec.NetNS, cmd.Start) }
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	d := &Daemon{spec: spec, cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	// Record the resolved executable: /proc/PID/exe shows it through symlinks.
	exe, err := filepath.EvalSymlinks(cmd.Path)
	if err != nil {
		exe = cmd.Path
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	record := fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, exe)
	if err := atomicfile.WriteFile(spec.PIDFile, []byte(record), 0o644); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	return d, nil
}

// PID is the daemon's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Exited is closed when the daemon exits while this program runs.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// ExitError describes how the daemon exited; valid once Exited is closed.
func (d *Daemon) ExitError() error {
	if d.err == nil {
		return errors.New("exited with status 0")
	}
	return d.err
}

// Find returns the pid recorded in pidFile if that process is alive and runs
// the executable that the pid file names (a recycled pid is not ours).
func Find(pidFile string) (int, bool) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return 0, false
	}
	pid, err := strconv.Atoi(lines[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if !alive(pid) {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0, false
	}
	// A rebuilt binary shows as "path (deleted)": still our daemon.
	if strings.TrimSuffix(exe, " (deleted)") != lines[1] {
		return 0, false
	}
	return pid, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// Stop ends the daemon of pidFile and its process group: SIGTERM, then SIGKILL
// after grace. It removes the pid file. ErrNotRunning when nothing was alive.
func Stop(pidFile string, grace time.Duration) error {
	pid, ok := Find(pidFile)
	if !ok {
		_ = os.Remove(pidFile)
		return ErrNotRunning
	}
	// The daemon leads its own session, so -pid is its whole group.
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if !waitGone(pid, grace) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if !waitGone(pid, 5*time.Second) {
			return fmt.Errorf("process %d did not exit after SIGKILL", pid)
		}
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if !alive(pid) && !groupAlive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupAlive reports whether any process of group pgid is left.
func groupAlive(pgid int) bool {
	// Signal 0 to the group checks existence without delivering anything;
	// zombies count, so look at each member.
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && alive(pid) {
			return true
		}
	}
	return false
}

// startMarker begins the line Start writes into the log before each start.
const startMarker = "=== chartpilot:"

// LogTail returns the last n non-empty lines that the latest start of a
// daemon wrote to its log, for error messages.
func LogTail(logFile string, n int) string {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return ""
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, startMarker):
			lines = lines[:0]
		case strings.TrimSpace(line) != "":
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Memory returns a process's resident set size and its peak, in bytes.
func Memory(pid int) (rss, peak uint64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}
