package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Step is one step of the journey, as the summary reports it.
type Step struct {
	Title    string        `json:"title"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration"`
	Err      string        `json:"error,omitempty"`
}

// runner runs the steps: commands with their output kept in a log file each,
// background processes stopped at the end, and the timings.
type runner struct {
	out    io.Writer
	logDir string
	env    []string
	steps  []Step
	procs  []*process
	total  int
	// logs guards the numbering of log files, which the component build
	// opens beside the steps.
	logs sync.Mutex
}

// step runs fn as the next step and records how long it took. fn returns a
// short detail for the summary. One goroutine runs the steps.
func (r *runner) step(title string, fn func() (string, error)) error {
	n := len(r.steps) + 1
	fmt.Fprintf(r.out, "[%d/%d] %s\n", n, r.total, title)
	began := time.Now()
	detail, err := fn()
	s := Step{Title: title, Detail: detail, Duration: time.Since(began).Round(10 * time.Millisecond)}
	if err != nil {
		s.Err = err.Error()
		fmt.Fprintf(r.out, "      FAILED after %s: %v\n", s.Duration, err)
	} else {
		line := "      ok in " + s.Duration.String()
		if detail != "" {
			line += ": " + detail
		}
		fmt.Fprintln(r.out, line)
	}
	r.steps = append(r.steps, s)
	return err
}

// logFile opens a new log file for a command, numbered in run order.
func (r *runner) logFile(name string) (*os.File, error) {
	r.logs.Lock()
	defer r.logs.Unlock()
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return nil, err
	}
	entries, _ := os.ReadDir(r.logDir)
	return os.Create(filepath.Join(r.logDir, fmt.Sprintf("%02d-%s.log", len(entries)+1, name)))
}

// run runs a command in dir to completion, its output in a log file; a
// failure names the command and shows the end of its output.
func (r *runner) run(ctx context.Context, dir string, args ...string) (string, error) {
	log, err := r.logFile(filepath.Base(args[0]) + "-" + logName(args[1:]))
	if err != nil {
		return "", err
	}
	defer log.Close()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), r.env...)
	cmd.Stdout = io.MultiWriter(log, &buf)
	cmd.Stderr = cmd.Stdout
	fmt.Fprintf(log, "$ %s\n", strings.Join(args, " "))
	began := time.Now()
	err = cmd.Run()
	fmt.Fprintf(log, "# %s in %s\n", exitText(err), time.Since(began).Round(10*time.Millisecond))
	if err != nil {
		return buf.String(), fmt.Errorf("%s: %w\n%s(log: %s)", strings.Join(args, " "), err, tail(buf.String(), 15), log.Name())
	}
	return buf.String(), nil
}

// exitText says how a command ended, for the last line of its log.
func exitText(err error) string {
	if err == nil {
		return "done"
	}
	return err.Error()
}

// logName makes a file name from a command's first words.
func logName(args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(words) == 2 {
			break
		}
		words = append(words, filepath.Base(a))
	}
	return strings.Join(words, "-")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// process is a command running in the background.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// start starts a background command, stopped by stopAll at the latest.
func (r *runner) start(name, dir string, env []string, args ...string) (*process, error) {
	log, err := r.logFile(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, append(append(os.Environ(), r.env...), env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that stopping it stops what it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(log, "$ %s\n", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	r.procs = append(r.procs, p)
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after a grace period.
func (p *process) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.log.Close()
}

// exited reports an error if the process has ended, with its log's end.
func (p *process) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		data, _ := os.ReadFile(p.log.Name())
		return fmt.Errorf("%s exited (%v)\n%s", p.name, err, tail(string(data), 15))
	default:
		return nil
	}
}

func (r *runner) stopAll() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].stop()
	}
	r.procs = nil
}

// syncWriter serializes writes to w: each Write (a line of progress) whole.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// poll calls fn until it reports done, ctx ends or timeout passes; the last
// reason fn gave is in the timeout's error.
func poll(ctx context.Context, timeout time.Duration, what string, fn func() (done bool, reason string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reason := ""
	for {
		done, why, err := fn()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if why != "" {
			reason = why
		}
		select {
		case <-ctx.Done():
			if reason != "" {
				return fmt.Errorf("timed out after %s waiting for %s: %s", timeout, what, reason)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
