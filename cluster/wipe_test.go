package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Down --wipe removes a cluster's state only from a directory whose state
// file Up wrote, as this user, and never follows a symlink out of it. No
// cluster starts: each directory is made by hand.
func TestWipeOnlyClusterState(t *testing.T) {
	tests := []struct {
		name string
		// state makes the state directory's state file (none when nil).
		state func(t *testing.T, dir, outside string)
		// refused expects a *NotStateDirError and everything left as it was.
		refused bool
	}{{
		name:    "no state file: a directory such as / or /tmp",
		refused: true,
	}, {
		name: "state file a symlink",
		state: func(t *testing.T, dir, outside string) {
			write(t, filepath.Join(outside, "cluster.json"), "{}")
			symlink(t, filepath.Join(outside, "cluster.json"), filepath.Join(dir, stateFile))
		},
		refused: true,
	}, {
		name: "state file of another user",
		state: func(t *testing.T, dir, _ string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			write(t, filepath.Join(dir, stateFile), "{}")
			if err := os.Lchown(filepath.Join(dir, stateFile), 4242, 4242); err != nil {
				t.Fatal(err)
			}
		},
		refused: true,
	}, {
		name: "the cluster's own state",
		state: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, stateFile), "{}")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			// Generic names, one a symlink out of the directory, one a
			// directory holding a symlink out; and a file of someone else's.
			write(t, filepath.Join(outside, "logs", "host.log"), "host")
			write(t, filepath.Join(outside, "run", "host.pid"), "1")
			symlink(t, filepath.Join(outside, "logs"), filepath.Join(dir, "logs"))
			write(t, filepath.Join(dir, "run", "kept"), "")
			symlink(t, filepath.Join(outside, "run"), filepath.Join(dir, "run", "host"))
			write(t, filepath.Join(dir, "pki", "ca.crt"), "")
			write(t, filepath.Join(dir, "notes.txt"), "not the cluster's")
			if tt.state != nil {
				tt.state(t, dir, outside)
			}
			c, err := New(Options{StateDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Down(context.Background(), DownOptions{Wipe: true})

			var notState *NotStateDirError
			if tt.refused {
				if !errors.As(err, &notState) || notState.Dir != dir {
					t.Fatalf("Down = %v, want a *NotStateDirError naming %s", err, dir)
				}
				for _, kept := range []string{"logs", "run/kept", "pki/ca.crt", "notes.txt"} {
					if _, err := os.Lstat(filepath.Join(dir, kept)); err != nil {
						t.Errorf("%s went with a refused wipe: %v", kept, err)
					}
				}
				if _, err := os.Lstat(filepath.Join(dir, "lock")); err == nil {
					t.Error("a refused wipe left a lock file")
				}
			} else {
				if err != nil {
					t.Fatalf("Down = %v", err)
				}
				for _, gone := range []string{"logs", "run", "pki", stateFile, "lock"} {
					if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
						t.Errorf("%s was not wiped", gone)
					}
				}
				if _, err := os.Lstat(filepath.Join(dir, "notes.txt")); err != nil {
					t.Errorf("the wipe took a file not the cluster's: %v", err)
				}
			}
			for _, host := range []string{"logs/host.log", "run/host.pid"} {
				if _, err := os.Lstat(filepath.Join(outside, host)); err != nil {
					t.Errorf("the wipe followed a symlink out of the state directory: %s: %v", host, err)
				}
			}
		})
	}
}

// A directory with nothing of a cluster's, or none at all, has nothing
// running and nothing to wipe (what --ignore-not-running ignores), and is
// left as it was.
func TestWipeNothing(t *testing.T) {
	for name, dir := range map[string]string{"empty": t.TempDir(), "missing": filepath.Join(t.TempDir(), "missing")} {
		t.Run(name, func(t *testing.T) {
			c, err := New(Options{StateDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Down(context.Background(), DownOptions{Wipe: true}); !errors.Is(err, ErrNotRunning) {
				t.Fatalf("Down = %v, want ErrNotRunning", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "lock")); err == nil {
				t.Error("Down left a lock file")
			}
		})
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
