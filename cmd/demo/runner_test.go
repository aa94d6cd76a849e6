package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIndent(t *testing.T) {
	var b strings.Builder
	w := indent(&b)
	for _, chunk := range []string{"one\ntw", "o\n", "three"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if want := "      one\n      two\n      three"; b.String() != want {
		t.Fatalf("indented:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestLogName(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bundle", "generate", "--version", "1"}, "bundle-generate"},
		{[]string{"catalog", "add", "bundle"}, "catalog-add"},
		{[]string{"-n", "x"}, ""},
		{[]string{"/tmp/x/init", "--chart"}, "init"},
	}
	for _, tt := range tests {
		if got := logName(tt.args); got != tt.want {
			t.Errorf("logName(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// A failing command's error names it and shows the end of its output; the
// whole output is in its log file.
func TestRunFailure(t *testing.T) {
	r := &runner{logDir: t.TempDir()}
	_, err := r.run(context.Background(), t.TempDir(), "sh", "-c", "for i in $(seq 1 30); do echo line $i; done; exit 3")
	if err == nil {
		t.Fatal("no error from a failing command")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "line 30") || strings.Contains(msg, "line 10\n") {
		t.Fatalf("error %q: want the exit status and the last 15 lines only", msg)
	}
	logs, _ := filepath.Glob(filepath.Join(r.logDir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("%d log files, want 1", len(logs))
	}
	data, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(data), "line 1\n") {
		t.Fatalf("the log file lacks the start of the output:\n%s", data)
	}
	if !strings.Contains(string(data), "\n# exit status 3 in ") {
		t.Fatalf("the log file does not end with how the command ended and how long it took:\n%s", data)
	}
}

// A background process is stopped with its process group, and its exit is
// reported with the end of its log.
func TestProcess(t *testing.T) {
	r := &runner{logDir: t.TempDir()}
	p, err := r.start("sleeper", t.TempDir(), nil, "sh", "-c", "echo started; sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.exited(); err != nil {
		t.Fatalf("running process reported as exited: %v", err)
	}
	began := time.Now()
	r.stopAll()
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("stopping took %s: SIGTERM did not reach the process group", d)
	}
	q, err := r.start("quitter", t.TempDir(), nil, "sh", "-c", "echo bye; exit 2")
	if err != nil {
		t.Fatal(err)
	}
	err = poll(context.Background(), 10*time.Second, "quitter to exit", func() (bool, string, error) { return false, "", q.exited() })
	if err == nil || !strings.Contains(err.Error(), "bye") {
		t.Fatalf("exit error %v: want the end of its log", err)
	}
	r.stopAll()
}

func TestPollTimeoutSaysWhy(t *testing.T) {
	err := poll(context.Background(), 700*time.Millisecond, "the thing", func() (bool, string, error) { return false, "still pending", nil })
	if err == nil || !strings.Contains(err.Error(), "the thing: still pending") {
		t.Fatalf("err = %v", err)
	}
	boom := errors.New("boom")
	if err := poll(context.Background(), time.Second, "x", func() (bool, string, error) { return false, "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

// A failed run keeps the cluster components' logs as they were, and a
// cluster that never wrote any (or none to keep) is no error.
func TestKeepClusterLogs(t *testing.T) {
	tests := []struct {
		name string
		// logs are the files in the cluster's log directory; nil: no directory.
		logs map[string]string
		// noDir: the demo knows of no cluster log directory.
		noDir bool
		want  map[string]string
	}{
		{name: "copied", logs: map[string]string{"olm.log": "started finalizer\n", "kube-apiserver.log": "ready\n"},
			want: map[string]string{"olm.log": "started finalizer\n", "kube-apiserver.log": "ready\n"}},
		{name: "cluster never started", logs: nil},
		{name: "no cluster log directory", noDir: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "logs")
			if tt.logs != nil {
				if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				for name, text := range tt.logs {
					if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			d := &demo{r: &runner{logDir: t.TempDir()}, clusterLog: src}
			if tt.noDir {
				d.clusterLog = ""
			}
			if err := d.keepClusterLogs(nil); err != nil {
				t.Fatal(err)
			}
			kept := filepath.Join(d.r.logDir, "cluster")
			got := map[string]string{}
			entries, _ := os.ReadDir(kept)
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(kept, e.Name()))
				if err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
				got[e.Name()] = string(data)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("kept %v, want %v", got, tt.want)
			}
			for name, text := range tt.want {
				if got[name] != text {
					t.Errorf("%s: %q, want %q", name, got[name], text)
				}
			}
			if (d.keptLogs != "") != (len(tt.want) > 0) {
				t.Errorf("keptLogs = %q", d.keptLogs)
			}
		})
	}
}
